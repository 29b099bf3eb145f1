//! Where each context's database lives, the bounded cache of open databases, and their
//! automatic maintenance.
//!
//! A server has one data directory; context `name` is the database in `<data>/<name>/`.
//! AIM tools may ask for `location: project`, which selects `<project root>/.hopgraph/`
//! instead, unless the data directory was given explicitly (flag or environment), which is
//! always honoured.
//!
//! Open databases are a cache, not a registry: a context is opened on first use and the
//! least recently used idle ones are closed once more than [`StoreConfig::open_max`] are
//! open, so any number of contexts can be used over a server's life with bounded file
//! descriptors. A handle in use by an in-flight call is never closed under it (the cache
//! hands out `Arc`s and only drops entries nobody else holds); while every open context is
//! busy the cache may exceed its bound by the number of calls in flight.
//!
//! Only writes that create data ([`Access::Create`]) create a database. A read on a
//! context that has no database answers as an empty store ([`Stores::snapshot`]); any other
//! write there answers "no such context". Neither touches anything on disk.
//!
//! Maintenance ([`Stores::maintain`], run by a background thread, see
//! [`start_maintenance`]): a context's WAL is checkpointed once it exceeds
//! [`StoreConfig::checkpoint_wal_bytes`] or once the context has been idle for
//! [`StoreConfig::idle_checkpoint`] with anything in its WAL; segments are compacted (which
//! also drops deleted data) when idle, or regardless once there are more than
//! [`StoreConfig::segments_max`] and the newer ones amount to something next to the oldest
//! (see [`compaction_due`]). Both run off the request path and write their segment
//! without the writer lock: readers never wait for them, writers of that context wait
//! only for their short commit steps (see the engine's DESIGN.md §6). A store opened with
//! embeddings an import left without their HNSW graph gets it built on a thread of its
//! own (see `index_vectors_in_background`); its vector searches are exact until then.

use std::collections::HashMap;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use hopgraph::kernel::{PooledScratch, ScratchPool};
use hopgraph::{Database, Options};
use hopgraph_embed::Embedder;
use hopgraph_memory::{ToolError, ToolErrorKind, check_context_name, one_line, quote_short};

/// The context used when a call names none.
pub const DEFAULT_CONTEXT: &str = "default";
/// Default [`StoreConfig::open_max`].
pub const OPEN_MAX_DEFAULT: usize = 64;
/// Largest accepted [`StoreConfig::open_max`] (each open database holds a few descriptors).
pub const OPEN_MAX_LIMIT: usize = 4096;
/// Default [`StoreConfig::checkpoint_wal_bytes`]: 4 MiB, so replaying the WAL at the next
/// open and checkpointing it each take milliseconds.
///
/// 1 MiB rather than more: until a checkpoint, recent writes live in the in-memory delta,
/// which a text search scores posting by posting; the soak's search p99 followed the
/// delta's size (a sawtooth of 1.2–3.4 ms per 10,000 calls with 4 MiB, 1.25–1.97 ms with
/// 1 MiB; SERVER.md).
pub const CHECKPOINT_WAL_BYTES_DEFAULT: u64 = 1 << 20;
/// Default [`StoreConfig::idle_checkpoint`].
pub const IDLE_CHECKPOINT_DEFAULT: Duration = Duration::from_secs(2);
/// Default [`StoreConfig::segments_max`].
pub const SEGMENTS_MAX_DEFAULT: usize = 4;
/// A busy context is compacted past this many segments whatever their sizes.
pub const SEGMENTS_HARD_MAX: usize = 16;
/// Past [`StoreConfig::segments_max`], a busy context is compacted once its newer segments
/// hold at least 1/`COMPACTION_NEWER_SHARE` of its oldest segment's bytes (see
/// [`compaction_due`]).
pub const COMPACTION_NEWER_SHARE: u64 = 4;
/// How often the maintenance thread looks at the open contexts.
pub const MAINTENANCE_PERIOD: Duration = Duration::from_millis(250);
/// Files whose presence marks a project root for `location: project`.
pub const PROJECT_MARKERS: [&str; 5] = [
    ".git",
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "go.mod",
];

/// Default [`StoreConfig::prefault_max_bytes`]: 1 GiB, far above an agent's memory graph
/// and well below a machine's memory.
pub const PREFAULT_MAX_BYTES_DEFAULT: u64 = 1 << 30;

/// Where a server keeps its databases.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// The data directory.
    pub data_dir: PathBuf,
    /// Whether the data directory was chosen explicitly (flag or environment variable).
    pub explicit: bool,
    /// The context used when a call names none.
    pub default_context: String,
    /// Where `location: project` starts looking for a project root.
    pub project_start: PathBuf,
    /// Options for opening databases.
    pub options: Options,
    /// How much of a just-opened database is read ahead in the background (see
    /// [`Snapshot::prefault_within`](hopgraph::Snapshot::prefault_within)); 0: nothing.
    pub prefault_max_bytes: u64,
    /// Most idle databases kept open (at least 1).
    pub open_max: usize,
    /// Checkpoint a context once its WAL is larger than this.
    pub checkpoint_wal_bytes: u64,
    /// Checkpoint (and compact) a context idle for this long.
    pub idle_checkpoint: Duration,
    /// Compact a context with more segments than this even when it is busy.
    pub segments_max: usize,
    /// The text-embedding model, when one was loaded (`--embed-model`): calls without an
    /// `embedding` get one computed from their text (see [`crate::embed`]).
    pub embedder: Option<Arc<Embedder>>,
    /// The tool sets served (`--tools`; default: the memory tools).
    pub profiles: Vec<crate::schema::Profile>,
}

impl StoreConfig {
    /// A configuration with an explicit data directory and the default context.
    pub fn new(data_dir: impl Into<PathBuf>) -> StoreConfig {
        StoreConfig {
            data_dir: data_dir.into(),
            explicit: true,
            default_context: DEFAULT_CONTEXT.to_owned(),
            project_start: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            // Compaction is the server's decision (idle time, segment count), never a
            // side effect of a commit: merging everything on the request path would stall
            // that call for a time proportional to the database.
            options: Options::default().compaction_segments_max(usize::MAX),
            prefault_max_bytes: PREFAULT_MAX_BYTES_DEFAULT,
            open_max: OPEN_MAX_DEFAULT,
            checkpoint_wal_bytes: CHECKPOINT_WAL_BYTES_DEFAULT,
            idle_checkpoint: IDLE_CHECKPOINT_DEFAULT,
            segments_max: SEGMENTS_MAX_DEFAULT,
            embedder: None,
            profiles: vec![crate::schema::Profile::Memory],
        }
    }
}

/// `location` of the AIM tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// `.hopgraph/` at the nearest project root.
    Project,
    /// The server's data directory.
    Global,
}

/// What a call needs of its context's database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// An existing database; a context without one is "no such context" (nothing is
    /// created).
    Existing,
    /// The database, created when missing (writes that add data).
    Create,
}

/// An open database of the cache, with what maintenance needs to know about its use.
#[derive(Debug)]
pub struct OpenDb {
    db: Database,
    /// Write calls since the last checkpoint this server made.
    writes: AtomicU64,
    /// Milliseconds since the cache's epoch at the last call.
    last_used_ms: AtomicU64,
    /// Position in the least-recently-used order (larger is newer).
    tick: AtomicU64,
}

impl OpenDb {
    /// Notes that a call wrote (or may have written) to this database.
    pub fn note_write(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }
}

impl Deref for OpenDb {
    type Target = Database;
    fn deref(&self) -> &Database {
        &self.db
    }
}

/// A context's database as calls receive it: keeps the database open while held.
pub type DbHandle = Arc<OpenDb>;

/// One open context, as `list_contexts` reports it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ContextInfo {
    /// The context name.
    pub name: String,
    /// Whether this server has its database open.
    pub open: bool,
}

/// What one maintenance pass did (for tests and logs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MaintenanceReport {
    /// Checkpoints written.
    pub checkpoints: usize,
    /// Compactions done.
    pub compactions: usize,
    /// Databases closed because the cache was over its bound.
    pub closed: usize,
}

#[derive(Debug, Default)]
struct Cache {
    open: HashMap<PathBuf, DbHandle>,
    tick: u64,
}

/// The open databases of one server.
#[derive(Debug)]
pub struct Stores {
    config: StoreConfig,
    cache: Mutex<Cache>,
    /// Serializes opening, so that two calls never open one directory twice; the cache
    /// lock itself is never held across I/O.
    opening: Mutex<()>,
    epoch: Instant,
    scratches: ScratchPool,
}

impl Stores {
    /// Stores for `config`; nothing is opened yet.
    pub fn new(config: StoreConfig) -> Stores {
        Stores {
            config,
            cache: Mutex::new(Cache::default()),
            opening: Mutex::new(()),
            epoch: Instant::now(),
            // Two blocking-pool threads run most queries; a few idle scratches suffice.
            scratches: ScratchPool::with_keep_max(4),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The directory of `context` (default: the configured default) at `location`.
    ///
    /// # Errors
    /// An invalid context name; no project root for `location: project`.
    pub fn dir(
        &self,
        context: Option<&str>,
        location: Option<Location>,
    ) -> Result<PathBuf, ToolError> {
        let context = context.unwrap_or(&self.config.default_context);
        check_context_name(context)?;
        let base = match location {
            Some(Location::Project) if !self.config.explicit => project_root(
                &self.config.project_start,
            )
            .map(|root| root.join(".hopgraph"))
            .ok_or_else(|| {
                ToolError::new(
                    ToolErrorKind::InvalidArgument,
                    one_line(&format!(
                        "No project root found above {} (looked for {}); use location \"global\"",
                        self.config.project_start.display(),
                        PROJECT_MARKERS.join(", ")
                    )),
                )
            })?,
            _ => self.config.data_dir.clone(),
        };
        Ok(base.join(context))
    }

    /// [`Stores::database`] for a call that writes: the database is noted as written for
    /// maintenance (even when the write then fails: cheap and harmless).
    ///
    /// # Errors
    /// See [`Stores::database`].
    pub fn for_write(
        &self,
        context: Option<&str>,
        location: Option<Location>,
        access: Access,
    ) -> Result<DbHandle, ToolError> {
        let h = self.database(context, location, access)?;
        h.note_write();
        Ok(h)
    }

    /// The database of `context` at `location`, opened on first use; with
    /// [`Access::Existing`] a context that has no database is an error and nothing is
    /// created.
    ///
    /// # Errors
    /// See [`Stores::dir`]; no such context; the database cannot be opened.
    pub fn database(
        &self,
        context: Option<&str>,
        location: Option<Location>,
        access: Access,
    ) -> Result<DbHandle, ToolError> {
        let dir = self.dir(context, location)?;
        if let Some(h) = self.cached(&dir) {
            return Ok(h);
        }
        let _opening = self.opening.lock();
        // Another call may have opened it while this one waited.
        if let Some(h) = self.cached(&dir) {
            return Ok(h);
        }
        if access == Access::Existing && !Database::exists(&dir) {
            let name = context.unwrap_or(&self.config.default_context);
            return Err(ToolError::new(
                ToolErrorKind::NotFound,
                one_line(&format!(
                    "No such context: {} has no database yet (in {}); write to it first \
                 (create_memory or aim_memory_store create it), or see list_contexts",
                    quote_short(name),
                    dir.display()
                )),
            ));
        }
        let db = Database::open_with(&dir, self.config.options.clone()).map_err(|e| {
            ToolError::new(
                ToolErrorKind::Storage,
                one_line(&format!(
                    "Storage error: cannot open the database in {}: {e}",
                    dir.display()
                )),
            )
        })?;
        prefault_in_background(&db, self.config.prefault_max_bytes);
        index_vectors_in_background(&db, self.config.options.read_only);
        if let Some(e) = &self.config.embedder {
            embed_missing_in_background(&db, e.clone(), self.config.options.read_only);
        }
        let handle = Arc::new(OpenDb {
            db,
            writes: AtomicU64::new(0),
            last_used_ms: AtomicU64::new(self.now_ms()),
            tick: AtomicU64::new(0),
        });
        let mut cache = self.cache.lock();
        cache.tick += 1;
        handle.tick.store(cache.tick, Ordering::Relaxed);
        cache.open.insert(dir, handle.clone());
        evict(&mut cache, self.config.open_max.max(1));
        Ok(handle)
    }

    /// The database of `context` at `location` for a call that only reads: `None` when
    /// the context has no database, which the caller answers as an empty store
    /// ([`Snapshot::empty`](hopgraph::Snapshot::empty)); nothing is created.
    ///
    /// # Errors
    /// See [`Stores::database`].
    pub fn for_read(
        &self,
        context: Option<&str>,
        location: Option<Location>,
    ) -> Result<Option<DbHandle>, ToolError> {
        match self.database(context, location, Access::Existing) {
            Ok(h) => Ok(Some(h)),
            Err(e) if e.kind() == ToolErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A snapshot of `context` at `location` for a call that only reads: an empty one
    /// when the context has no database (nothing is created).
    ///
    /// # Errors
    /// See [`Stores::database`].
    pub fn snapshot(
        &self,
        context: Option<&str>,
        location: Option<Location>,
    ) -> Result<hopgraph::Snapshot, ToolError> {
        Ok(self
            .for_read(context, location)?
            .map_or_else(hopgraph::Snapshot::empty, |h| h.snapshot()))
    }

    /// Opens the default context's database at start when it exists, so the first call
    /// of a session does not pay for opening it (a soak's first `get_memory` after a
    /// restart took 5.3x a warm one with opening on the call). A missing default context
    /// is left for the first write to create; a failure to open is logged, and calls
    /// report it as before.
    pub fn open_default(&self) {
        match self.database(None, None, Access::Existing) {
            Ok(_) => {}
            Err(e) if e.kind() == ToolErrorKind::NotFound => {}
            Err(e) => crate::log::log(&format!("default context not opened: {}", e.message())),
        }
    }

    fn cached(&self, dir: &Path) -> Option<DbHandle> {
        let mut cache = self.cache.lock();
        cache.tick += 1;
        let tick = cache.tick;
        let h = cache.open.get(dir)?;
        h.tick.store(tick, Ordering::Relaxed);
        h.last_used_ms.store(self.now_ms(), Ordering::Relaxed);
        Some(h.clone())
    }

    /// Number of databases open in the cache.
    pub fn open_count(&self) -> usize {
        self.cache.lock().open.len()
    }

    /// The contexts with a database in the data directory, by name, and whether each is
    /// open. Reads the directory only; a missing data directory has no contexts.
    ///
    /// # Errors
    /// The data directory cannot be read.
    pub fn list_contexts(&self) -> Result<Vec<ContextInfo>, ToolError> {
        let data = &self.config.data_dir;
        let entries = match std::fs::read_dir(data) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(ToolError::new(
                    ToolErrorKind::Storage,
                    one_line(&format!(
                        "Storage error: cannot read the data directory {}: {e}",
                        data.display()
                    )),
                ));
            }
        };
        let open: Vec<PathBuf> = self.cache.lock().open.keys().cloned().collect();
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let path = entry.path();
            if check_context_name(&name).is_err() || !Database::exists(&path) {
                continue;
            }
            out.push(ContextInfo {
                open: open.contains(&path),
                name,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// A traversal scratch for one query (returned to the pool on drop).
    pub fn scratch(&self) -> PooledScratch<'_> {
        self.scratches.get()
    }

    /// One maintenance pass over the open contexts (see the module docs): checkpoints by
    /// WAL size and idle time, compaction when idle or past [`StoreConfig::segments_max`],
    /// and closing idle databases beyond the bound. Errors are logged, never raised: the
    /// data is safe in the WAL and the next pass tries again.
    pub fn maintain(&self) -> MaintenanceReport {
        let mut report = MaintenanceReport::default();
        let handles: Vec<DbHandle> = {
            let mut cache = self.cache.lock();
            report.closed = evict(&mut cache, self.config.open_max.max(1));
            cache.open.values().cloned().collect()
        };
        let now = self.now_ms();
        let idle_ms = u64::try_from(self.config.idle_checkpoint.as_millis()).unwrap_or(u64::MAX);
        for h in handles {
            let idle = now.saturating_sub(h.last_used_ms.load(Ordering::Relaxed)) >= idle_ms;
            if let Err(e) = self.maintain_one(&h, idle, &mut report) {
                crate::log::log(&format!(
                    "maintenance of {} failed (will retry): {e}",
                    h.path().display()
                ));
            }
        }
        report
    }

    fn maintain_one(
        &self,
        h: &OpenDb,
        idle: bool,
        report: &mut MaintenanceReport,
    ) -> Result<(), hopgraph::Error> {
        let writes = h.writes.load(Ordering::Relaxed);
        if writes == 0 {
            return Ok(());
        }
        let stats = h.stats()?;
        let wal_pending = stats.lsn > stats.checkpoint_lsn;
        if wal_pending && (idle || stats.wal_bytes >= self.config.checkpoint_wal_bytes) {
            let t = Instant::now();
            let r = h.checkpoint()?;
            log_slow(
                h,
                "checkpoint",
                t,
                &format!("{} nodes, {} edges", r.nodes, r.edges),
            );
            report.checkpoints += 1;
        }
        // The WAL just checkpointed (or about to be) counts as one more segment.
        let mut segments = stats.segments.clone();
        if wal_pending {
            segments.push((0, stats.wal_bytes, 0));
        }
        if (idle && segments.len() > 1) || compaction_due(&segments, self.config.segments_max) {
            let t = Instant::now();
            let r = h.compact()?;
            log_slow(
                h,
                "compaction",
                t,
                &format!("{} segments merged", r.segments_merged),
            );
            report.compactions += 1;
        }
        if idle
            && self.config.profiles.iter().any(|p| {
                matches!(
                    p,
                    crate::schema::Profile::ServerMemory | crate::schema::Profile::Aim
                )
            })
        {
            // search_nodes / aim_memory_search use the segments' word indexes: build the
            // new segment's here, off the request path, rather than in the next search.
            let t = Instant::now();
            h.snapshot().substring_candidates("a")?;
            log_slow(h, "word index", t, "for search_nodes");
        }
        if idle {
            // Everything written before this pass is now in one segment; a later write
            // makes the context a candidate again.
            let _ = h
                .writes
                .compare_exchange(writes, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Checkpoints and compacts every open context that was written to (at shutdown, so
    /// that the next start replays no WAL and the files hold no deleted data), then closes
    /// them all.
    pub fn shutdown(&self) {
        let handles: Vec<DbHandle> = self.cache.lock().open.values().cloned().collect();
        for h in handles {
            if h.writes.load(Ordering::Relaxed) > 0
                && let Err(e) = h.checkpoint().and_then(|_| h.compact())
            {
                crate::log::log(&format!(
                    "checkpoint or compaction of {} at shutdown failed (the WAL keeps the data): {e}",
                    h.path().display()
                ));
            }
        }
        self.close_all();
    }

    /// Closes every open database (they reopen on next use).
    pub fn close_all(&self) {
        self.cache.lock().open.clear();
    }
}

/// Closes the least recently used idle databases until at most `max` are open; returns how
/// many were closed. A handle someone else holds (a call in flight) is busy and stays.
fn evict(cache: &mut Cache, max: usize) -> usize {
    let mut closed = 0;
    while cache.open.len() > max {
        let victim = cache
            .open
            .iter()
            .filter(|(_, h)| Arc::strong_count(h) == 1)
            .min_by_key(|(_, h)| h.tick.load(Ordering::Relaxed))
            .map(|(dir, _)| dir.clone());
        let Some(dir) = victim else {
            break;
        };
        cache.open.remove(&dir);
        closed += 1;
    }
    closed
}

/// Starts the thread that runs [`Stores::maintain`] every [`MAINTENANCE_PERIOD`] for as long
/// as `stores` lives.
///
/// # Errors
/// The thread cannot be started.
pub fn start_maintenance(stores: &Arc<Stores>) -> std::io::Result<()> {
    let weak: Weak<Stores> = Arc::downgrade(stores);
    std::thread::Builder::new()
        .name("hopgraph-maintenance".to_owned())
        .spawn(move || {
            loop {
                std::thread::sleep(MAINTENANCE_PERIOD);
                let Some(stores) = weak.upgrade() else {
                    return;
                };
                stores.maintain();
            }
        })
        .map(|_| ())
}

/// Checks that `dir` can serve as the data directory: an existing path must be a readable
/// directory; a missing one must have a directory as its nearest existing ancestor (it is
/// created on the first write). Creates nothing.
///
/// # Errors
/// A one-line message naming the path and the problem.
pub fn check_data_dir(dir: &Path) -> Result<(), String> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => std::fs::read_dir(dir)
            .map(|_| ())
            .map_err(|e| format!("data directory {} cannot be read: {e}", dir.display())),
        Ok(_) => Err(format!(
            "data directory {} exists and is not a directory",
            dir.display()
        )),
        Err(e) => {
            let parent = dir
                .ancestors()
                .skip(1)
                .find(|a| !a.as_os_str().is_empty() && std::fs::symlink_metadata(a).is_ok());
            match parent {
                Some(p) if !p.is_dir() => Err(format!(
                    "data directory {} cannot be created: {} is not a directory",
                    dir.display(),
                    p.display()
                )),
                _ if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                _ => Err(format!(
                    "data directory {} cannot be used: {e}",
                    dir.display()
                )),
            }
        }
    }
}

/// Maintenance steps at least this long are logged (to stderr), so that an operator can
/// match latency outliers to them.
const MAINTENANCE_LOG_MIN: Duration = Duration::from_millis(50);

/// Logs maintenance step `what` on `h` if it took at least [`MAINTENANCE_LOG_MIN`].
fn log_slow(h: &OpenDb, what: &str, started: Instant, detail: &str) {
    let took = started.elapsed();
    if took >= MAINTENANCE_LOG_MIN {
        crate::log::log(&format!(
            "{what} of {} took {} ms ({detail})",
            h.path().display(),
            took.as_millis()
        ));
    }
}

/// Reads the pages of a just-opened database's segments on a thread of its own, so that
/// the first queries of a session take no page faults (opening itself stays lazy, and a
/// query does not wait for this), within `max_bytes` (see
/// [`Snapshot::prefault_within`](hopgraph::Snapshot::prefault_within)). The traversal
/// scratches are not prefaulted: searches keep their marks in small per-side tables and
/// map the per-node arrays (72 bytes per node) only past 65,536 marks, so mapping them
/// ahead cost every server that much resident memory for searches that rarely use it.
/// A server that cannot start the thread just runs cold.
fn prefault_in_background(db: &Database, max_bytes: u64) {
    if max_bytes == 0 {
        return;
    }
    let snap = db.snapshot();
    let started = std::thread::Builder::new()
        .name("hopgraph-prefault".to_owned())
        .spawn(move || {
            let total = snap.segment_bytes();
            let read = snap.prefault_within(max_bytes);
            if read < total {
                crate::log::log(&format!(
                    "read ahead {} of {} MiB: the database is larger than --prefault-mb, \
                     so at most its per-node indexes were read",
                    read >> 20,
                    total >> 20
                ));
            }
        });
    if let Err(e) = started {
        crate::log::log(&format!("prefault thread not started: {e}"));
    }
}

/// Builds, on a thread of its own, the HNSW graph of embeddings an import stored without
/// it (`hopgraph import` defers it for large imports; see
/// [`Database::index_vectors`](hopgraph::Database::index_vectors)). Until it finishes,
/// vector searches of those embeddings are exact scans: the same answers, slower. Calls
/// are not held up: the build runs without the writer lock and commits each segment's
/// replacement atomically. A read-only server leaves them as they are.
/// A directory a background thread of this process works on, listed in `set` until the
/// claim is dropped (when the work ends however it ends, or with the thread's closure
/// when the thread cannot start), so a context closed and opened again meanwhile does
/// not start the same work twice.
struct DirClaim {
    set: &'static Mutex<Vec<PathBuf>>,
    dir: PathBuf,
}

impl DirClaim {
    /// The claim on `dir`, or `None` when another thread holds it.
    fn take(set: &'static Mutex<Vec<PathBuf>>, dir: &Path) -> Option<DirClaim> {
        let mut held = set.lock();
        if held.iter().any(|d| d == dir) {
            return None;
        }
        held.push(dir.to_path_buf());
        Some(DirClaim {
            set,
            dir: dir.to_path_buf(),
        })
    }
}

impl Drop for DirClaim {
    fn drop(&mut self) {
        self.set.lock().retain(|d| *d != self.dir);
    }
}

/// Memories and entities per batch of [`embed_missing_in_background`] (one model call,
/// one commit).
const EMBED_BATCH: usize = 32;

/// With a server model: gives the memories and entities of a context that have text but
/// no embedding (written before the server had a model, or by the CLI) their model
/// embedding, on a thread of its own, batch by batch, each batch one commit; searches
/// find them by meaning as each batch lands. Nothing happens when the context's
/// embeddings are another model's (the log says so). A node changed between the scan
/// and its batch's commit is left for the next open (its vector would be of the old
/// text).
fn embed_missing_in_background(db: &Database, embedder: Arc<Embedder>, read_only: bool) {
    /// Directories a thread of this process is embedding (see `index_vectors_in_background`).
    static EMBEDDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    if read_only || db.snapshot().node_count() == 0 {
        return;
    }
    let Some(done) = DirClaim::take(&EMBEDDING, db.path()) else {
        return;
    };
    let db = db.clone();
    let spawned = std::thread::Builder::new()
        .name("hopgraph-embed".to_owned())
        .spawn(move || {
            let _done = done;
            let where_ = db.path().display().to_string();
            // The scan reads every node once, off the request path.
            let snap = db.snapshot();
            let todo: Vec<hopgraph::NodeId> = snap
                .node_ids()
                .filter(|&id| {
                    matches!(snap.node(id), Ok(Some(n)) if n.props.embedding.is_none()
                        && hopgraph_memory::embed_text::node_text(&n).is_some())
                })
                .collect();
            drop(snap);
            if todo.is_empty() {
                return;
            }
            if let Err(e) = crate::embed::check_model(&db, &embedder, true) {
                crate::log::log(&format!(
                    "{} memories of {where_} have no embedding and stay without: {}",
                    todo.len(),
                    e.message()
                ));
                return;
            }
            crate::log::log(&format!(
                "embedding {} memories of {where_} written without a vector, in the background",
                todo.len()
            ));
            let t = Instant::now();
            let mut embedded = 0usize;
            for ids in todo.chunks(EMBED_BATCH) {
                match embed_batch(&db, &embedder, ids) {
                    Ok(n) => embedded += n,
                    Err(e) => {
                        crate::log::log(&format!(
                            "embedding the memories of {where_} stopped: {e}"
                        ));
                        return;
                    }
                }
            }
            crate::log::log(&format!(
                "embedded {embedded} memories of {where_} in {:.1} s",
                t.elapsed().as_secs_f64()
            ));
        });
    if let Err(e) = spawned {
        crate::log::log(&format!("cannot start the embedding thread: {e}"));
    }
}

/// Embeds and commits the nodes `ids` that still have text and no embedding; returns how
/// many got one.
fn embed_batch(
    db: &Database,
    embedder: &Embedder,
    ids: &[hopgraph::NodeId],
) -> Result<usize, String> {
    let snap = db.snapshot();
    let mut keys = Vec::with_capacity(ids.len());
    let mut texts = Vec::with_capacity(ids.len());
    let mut stamps = Vec::with_capacity(ids.len());
    for &id in ids {
        if let Some(n) = snap.node(id).map_err(|e| e.to_string())?
            && n.props.embedding.is_none()
            && let Some(text) = hopgraph_memory::embed_text::node_text(&n)
        {
            keys.push(n.key.clone());
            texts.push(text);
            stamps.push(n.updated_at);
        }
    }
    drop(snap);
    if texts.is_empty() {
        return Ok(0);
    }
    let vectors = embedder.embed(&texts).map_err(|e| e.to_string())?;
    // Only nodes unchanged since they were read: a vector of an older text is not written.
    let now = db.snapshot();
    let mut batch = hopgraph::WriteBatch::new();
    let mut n = 0;
    for ((key, v), stamp) in keys.into_iter().zip(vectors).zip(stamps) {
        let unchanged = matches!(now.node_by_key(&key), Ok(Some(node))
            if node.updated_at == stamp && node.props.embedding.is_none());
        if unchanged {
            batch.update_node(
                key,
                hopgraph::NodePatch {
                    embedding: Some(Some(v)),
                    ..hopgraph::NodePatch::default()
                },
            );
            n += 1;
        }
    }
    drop(now);
    if n > 0 {
        db.commit(batch).map_err(|e| e.to_string())?;
    }
    Ok(n)
}

fn index_vectors_in_background(db: &Database, read_only: bool) {
    /// Directories whose graph a thread of this process is building: a context closed
    /// and opened again meanwhile does not start a second build.
    static BUILDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let pending = db.vectors_awaiting_index();
    if pending == 0 || read_only {
        return;
    }
    let Some(done) = DirClaim::take(&BUILDING, db.path()) else {
        return;
    };
    let db = db.clone();
    let started = std::thread::Builder::new()
        .name("hopgraph-index".to_owned())
        .spawn(move || {
            let _done = done;
            crate::log::log(&format!(
                "building the HNSW graph of {pending} embeddings of {} in the background \
                 (vector searches scan them exactly until it is done)",
                db.path().display()
            ));
            if db.vector_index_build_running() {
                crate::log::log(&format!(
                    "another process is building the vector graphs of {}; waiting for it",
                    db.path().display()
                ));
            }
            let t = Instant::now();
            match db.index_vectors() {
                Ok(r) if r.segments.is_empty() && r.pending == 0 => crate::log::log(&format!(
                    "the HNSW graphs of {} were built by another process",
                    db.path().display()
                )),
                Ok(r) => crate::log::log(&format!(
                    "HNSW graph of {} embeddings of {} built in {:.1} s",
                    r.vectors,
                    db.path().display(),
                    t.elapsed().as_secs_f64()
                )),
                Err(e) => crate::log::log(&format!(
                    "HNSW graph build of {} failed (searches stay exact; `hopgraph index` \
                     retries): {e}",
                    db.path().display()
                )),
            }
        });
    if let Err(e) = started {
        crate::log::log(&format!("vector index thread not started: {e}"));
    }
}

/// The nearest directory at or above `start` that holds one of [`PROJECT_MARKERS`].
pub fn project_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| PROJECT_MARKERS.iter().any(|m| dir.join(m).exists()))
        .map(Path::to_path_buf)
}

/// The platform data directory: `$XDG_DATA_HOME/hopgraph`, else
/// `~/.local/share/hopgraph`, else `./hopgraph-data`.
pub fn platform_data_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("hopgraph");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h).join(".local/share/hopgraph");
    }
    PathBuf::from("hopgraph-data")
}

/// Whether a busy context with `segments` ((id, bytes, edge rows), oldest first, as
/// `Stats::segments` lists them) should be compacted: past `segments_max` segments when the
/// newer ones hold at least 1/[`COMPACTION_NEWER_SHARE`] of the oldest's bytes, and past
/// [`SEGMENTS_HARD_MAX`] regardless. A compaction rewrites the whole store, so on a large
/// store a few small checkpoint segments wait until they add up (each byte is rewritten
/// about `COMPACTION_NEWER_SHARE + 1` times at most, not once per few checkpoints); on a
/// small one it follows the segment count.
pub fn compaction_due(segments: &[(u64, u64, u64)], segments_max: usize) -> bool {
    let Some(((_, oldest, _), newer)) = segments.split_first() else {
        return false;
    };
    if segments.len() > SEGMENTS_HARD_MAX.max(segments_max) {
        return true;
    }
    let newer_bytes: u64 = newer.iter().map(|s| s.1).sum();
    segments.len() > segments_max && newer_bytes.saturating_mul(COMPACTION_NEWER_SHARE) >= *oldest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(bytes: &[u64]) -> Vec<(u64, u64, u64)> {
        (1u64..).zip(bytes).map(|(id, &b)| (id, b, 0)).collect()
    }

    #[test]
    fn compaction_follows_the_count_on_small_stores_and_the_bytes_on_large_ones() {
        assert!(!compaction_due(&[], 4));
        assert!(!compaction_due(&segs(&[100, 50, 50, 50]), 4));
        // Small store: 5 segments, the newer ones as large as the oldest.
        assert!(compaction_due(&segs(&[100, 50, 50, 50, 50]), 4));
        // Large store: 5 segments of checkpoints next to 1,000 bytes: not yet.
        assert!(!compaction_due(&segs(&[1_000, 50, 50, 50, 50]), 4));
        // ... until they add up to a quarter of it,
        assert!(compaction_due(&segs(&[1_000, 50, 50, 50, 50, 50]), 4));
        // or past the hard cap whatever their sizes.
        let mut many = vec![1_000_000];
        many.extend([1; SEGMENTS_HARD_MAX]);
        assert!(compaction_due(&segs(&many), 4));
        many.pop();
        assert!(!compaction_due(&segs(&many), 4));
    }
}
