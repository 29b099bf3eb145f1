//! Where each context's database lives, and the cache of open databases.
//!
//! A server has one data directory; context `name` is the database in `<data>/<name>/`,
//! opened on first use and kept open. AIM tools may ask for `location: project`, which
//! selects `<project root>/.hopgraph/` instead, unless the data directory was given
//! explicitly (flag or environment), which is always honoured.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use hopgraph::traverse::{PooledScratch, ScratchPool};
use hopgraph::{Database, Options};
use hopgraph_memory::{ToolError, check_context_name, one_line};

/// The context used when a call names none.
pub const DEFAULT_CONTEXT: &str = "default";
/// Most databases one server keeps open.
pub const OPEN_DATABASES_MAX: usize = 256;
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
}

impl StoreConfig {
    /// A configuration with an explicit data directory and the default context.
    pub fn new(data_dir: impl Into<PathBuf>) -> StoreConfig {
        StoreConfig {
            data_dir: data_dir.into(),
            explicit: true,
            default_context: DEFAULT_CONTEXT.to_owned(),
            project_start: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            options: Options::default(),
            prefault_max_bytes: PREFAULT_MAX_BYTES_DEFAULT,
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

/// The open databases of one server.
#[derive(Debug)]
pub struct Stores {
    config: StoreConfig,
    open: Mutex<HashMap<PathBuf, Database>>,
    scratches: ScratchPool,
}

impl Stores {
    /// Stores for `config`; nothing is opened yet.
    pub fn new(config: StoreConfig) -> Stores {
        Stores {
            config,
            open: Mutex::new(HashMap::new()),
            // Two blocking-pool threads run most queries; a few idle scratches suffice.
            scratches: ScratchPool::with_keep_max(4),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &StoreConfig {
        &self.config
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
                ToolError(one_line(&format!(
                    "No project root found above {} (looked for {}); use location \"global\"",
                    self.config.project_start.display(),
                    PROJECT_MARKERS.join(", ")
                )))
            })?,
            _ => self.config.data_dir.clone(),
        };
        Ok(base.join(context))
    }

    /// The database of `context` at `location`, opened on first use.
    ///
    /// # Errors
    /// See [`Stores::dir`]; the database cannot be opened; too many open databases.
    pub fn database(
        &self,
        context: Option<&str>,
        location: Option<Location>,
    ) -> Result<Database, ToolError> {
        let dir = self.dir(context, location)?;
        let mut open = self.open.lock();
        if let Some(db) = open.get(&dir) {
            return Ok(db.clone());
        }
        if open.len() >= OPEN_DATABASES_MAX {
            return Err(ToolError(format!(
                "Too many contexts open in this server (limit {OPEN_DATABASES_MAX})"
            )));
        }
        // Opening under the lock keeps two calls from opening one directory twice; it is
        // a one-time cost per context.
        let db = Database::open_with(&dir, self.config.options.clone()).map_err(|e| {
            ToolError(one_line(&format!(
                "Storage error: cannot open the database in {}: {e}",
                dir.display()
            )))
        })?;
        open.insert(dir, db.clone());
        prefault_in_background(&db, self.config.prefault_max_bytes);
        Ok(db)
    }

    /// A traversal scratch for one query (returned to the pool on drop).
    pub fn scratch(&self) -> PooledScratch<'_> {
        self.scratches.get()
    }

    /// Closes every open database (they reopen on next use).
    pub fn close_all(&self) {
        self.open.lock().clear();
    }
}

/// Reads the pages of a just-opened database's segments on a thread of its own, so that
/// the first queries of a session take no page faults (opening itself stays lazy, and a
/// query does not wait for this), within `max_bytes` (see
/// [`Snapshot::prefault_within`](hopgraph::Snapshot::prefault_within)). A server that cannot
/// start the thread just runs cold.
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
                crate::server::log(&format!(
                    "read ahead {} of {} MiB: the database is larger than --prefault-mb, \
                     so at most its per-node indexes were read",
                    read >> 20,
                    total >> 20
                ));
            }
        });
    if let Err(e) = started {
        crate::server::log(&format!("prefault thread not started: {e}"));
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
