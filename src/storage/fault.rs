//! A fault-injecting [`Io`] for tests: fails one chosen operation, or simulates power loss.
//!
//! [`FaultIo`] performs every operation on the real file system under a root directory and
//! keeps a model of what a disk would have made durable:
//!
//! - per file (an inode, numbered when created), its contents as of the last fsync or
//!   fdatasync; a new file's durable contents are empty;
//! - per path under the root, the directory entry (file number or directory) as of the last
//!   fsync of its parent directory. Everything under the root when the `FaultIo` is made
//!   counts as durable.
//!
//! A [`Plan`] names an operation by number (all counted operations, or fsyncs only) and a
//! [`FaultKind`]. EIO and ENOSPC fail that operation without performing it. A short write
//! waits for the first write at or after that number, writes half of it and fails. A
//! crash, before performing the operation, rewrites the directory tree to exactly its
//! durable state (entries never made durable disappear, unsynced bytes are lost, an
//! unsynced rename reverts) and then fails that and every later operation, as a machine
//! that lost power would. Files are replaced, never rewritten in place, so mappings held by
//! the crashed handle stay valid.
//!
//! The model assumes nothing beyond POSIX (no ext4 `auto_da_alloc`, no ordered-mode
//! rename): the weakest file system hopgraph promises to survive (DESIGN.md §8). fsyncs are
//! only recorded, not performed, which makes the simulation fast; a `FaultIo` is a test
//! tool and makes nothing durable for real. `stat`, directory listing, `flock` and file
//! length are not counted and never fail, except after a crash.
//!
//! Compiled into every build (a few hundred lines, no dependencies, unused unless chosen
//! through [`Options::io`](crate::Options::io)) so that integration tests and downstream
//! hosts can drive it without a cargo feature.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use parking_lot::Mutex;

use super::io::{Io, IoFile, OpenMode, RealFile, RealIo};

/// What an injected fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// The operation fails with EIO and does nothing.
    Eio,
    /// The operation fails with ENOSPC and does nothing.
    Enospc,
    /// The first write at or after the planned operation writes half its bytes and fails
    /// with ENOSPC.
    ShortWrite,
    /// Power loss: the files are reset to their durable state, and this and every later
    /// operation fails with EIO.
    Crash,
}

/// The operation a [`Plan`] names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The `n`-th counted operation (1-based).
    Op(u64),
    /// The `n`-th fsync, fdatasync or directory fsync (1-based).
    Sync(u64),
}

/// One fault to inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Where.
    pub at: Trigger,
    /// What.
    pub kind: FaultKind,
}

/// The fault that fired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Injected {
    /// Its kind.
    pub kind: FaultKind,
    /// The number of the operation it hit.
    pub op: u64,
    /// The operation and path.
    pub what: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Other,
    Write,
    Sync,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    Dir,
    File(u64),
}

#[derive(Debug, Default)]
struct Model {
    root: PathBuf,
    ops: u64,
    syncs: u64,
    plan: Option<Plan>,
    injected: Option<Injected>,
    dead: bool,
    next_fid: u64,
    /// Durable contents per file number.
    data: HashMap<u64, Vec<u8>>,
    /// Entries under the root as they are now, and as they were at the last fsync of their
    /// directory.
    current: BTreeMap<PathBuf, Entry>,
    durable: BTreeMap<PathBuf, Entry>,
}

fn eio(what: &str) -> io::Error {
    io::Error::other(format!("injected fault: EIO ({what})"))
}

fn dead_error() -> io::Error {
    io::Error::other("injected fault: the simulated machine lost power")
}

const ENOSPC: i32 = 28;
const EIO: i32 = 5;

impl Model {
    fn tracked(&self, p: &Path) -> bool {
        p.starts_with(&self.root) && p != self.root
    }

    /// Counts an operation and decides whether it fails. `Ok(true)`: perform a short write.
    fn begin(&mut self, class: Class, what: &dyn Fn() -> String) -> io::Result<bool> {
        if self.dead {
            return Err(dead_error());
        }
        self.ops += 1;
        if class == Class::Sync {
            self.syncs += 1;
        }
        let Some(plan) = self.plan else {
            return Ok(false);
        };
        let due = match plan.at {
            Trigger::Op(n) => self.ops >= n,
            Trigger::Sync(n) => class == Class::Sync && self.syncs >= n,
        };
        if !due || (plan.kind == FaultKind::ShortWrite && class != Class::Write) {
            return Ok(false);
        }
        self.plan = None;
        let what = what();
        self.injected = Some(Injected {
            kind: plan.kind,
            op: self.ops,
            what: what.clone(),
        });
        match plan.kind {
            FaultKind::Eio => Err(io::Error::from_raw_os_error(EIO)),
            FaultKind::Enospc => Err(io::Error::from_raw_os_error(ENOSPC)),
            FaultKind::ShortWrite => Ok(true),
            FaultKind::Crash => {
                self.crash();
                Err(eio(&format!("power lost before {what}")))
            }
        }
    }

    fn new_file(&mut self, path: &Path) {
        if self.tracked(path) {
            self.next_fid += 1;
            self.data.insert(self.next_fid, Vec::new());
            self.current
                .insert(path.to_owned(), Entry::File(self.next_fid));
        }
    }

    fn fid(&self, path: &Path) -> Option<u64> {
        match self.current.get(path) {
            Some(Entry::File(f)) => Some(*f),
            _ => None,
        }
    }

    fn sync_dir(&mut self, dir: &Path) {
        let children = |m: &BTreeMap<PathBuf, Entry>| -> Vec<(PathBuf, Entry)> {
            m.iter()
                .filter(|(p, _)| p.parent() == Some(dir))
                .map(|(p, e)| (p.clone(), *e))
                .collect()
        };
        for (p, _) in children(&self.durable) {
            self.durable.remove(&p);
        }
        for (p, e) in children(&self.current) {
            self.durable.insert(p, e);
        }
    }

    /// Rewrites the tree to its durable state and stops the machine.
    fn crash(&mut self) {
        self.dead = true;
        // Entries are visible only when every directory above them is durable too; the
        // map is ordered parents first.
        let mut visible: BTreeMap<PathBuf, Entry> = BTreeMap::new();
        for (p, e) in &self.durable {
            let parent_ok = p
                .parent()
                .is_some_and(|d| d == self.root || visible.get(d) == Some(&Entry::Dir));
            if parent_ok {
                visible.insert(p.clone(), *e);
            }
        }
        // Restoring is best effort: a failure here shows up as a mismatch in the test.
        for (p, e) in self.current.iter().rev() {
            let _ = match e {
                Entry::File(_) => std::fs::remove_file(p),
                Entry::Dir if visible.get(p) == Some(&Entry::Dir) => Ok(()),
                Entry::Dir => std::fs::remove_dir_all(p),
            };
        }
        for (p, e) in &visible {
            let _ = match e {
                Entry::Dir => std::fs::create_dir(p),
                Entry::File(f) => std::fs::write(p, self.data.get(f).map_or(&[][..], |d| d)),
            };
        }
        self.current = visible.clone();
        self.durable = visible;
    }

    fn scan(&mut self, dir: &Path) -> io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                self.current.insert(path.clone(), Entry::Dir);
                self.scan(&path)?;
            } else {
                self.next_fid += 1;
                self.data.insert(self.next_fid, std::fs::read(&path)?);
                self.current.insert(path, Entry::File(self.next_fid));
            }
        }
        Ok(())
    }
}

/// The fault-injecting [`Io`] (see the module docs).
#[derive(Debug, Clone)]
pub struct FaultIo {
    model: Arc<Mutex<Model>>,
}

impl FaultIo {
    /// A `FaultIo` for files under `root` (made absolute and canonical), which must exist;
    /// what is under it now counts as durable. No fault is planned.
    ///
    /// # Errors
    /// I/O errors reading the tree.
    pub fn new(root: &Path) -> io::Result<FaultIo> {
        let mut m = Model {
            root: root.canonicalize()?,
            ..Model::default()
        };
        let root = m.root.clone();
        m.scan(&root)?;
        m.durable = m.current.clone();
        Ok(FaultIo {
            model: Arc::new(Mutex::new(m)),
        })
    }

    /// The canonical root.
    pub fn root(&self) -> PathBuf {
        self.model.lock().root.clone()
    }

    /// Plans one fault (replacing any planned one that has not fired).
    pub fn plan(&self, plan: Plan) {
        self.model.lock().plan = Some(plan);
    }

    /// The fault that fired, if any.
    pub fn injected(&self) -> Option<Injected> {
        self.model.lock().injected.clone()
    }

    /// Operations counted so far.
    pub fn ops(&self) -> u64 {
        self.model.lock().ops
    }

    /// fsyncs, fdatasyncs and directory fsyncs counted so far.
    pub fn syncs(&self) -> u64 {
        self.model.lock().syncs
    }

    /// Whether a simulated crash happened.
    pub fn crashed(&self) -> bool {
        self.model.lock().dead
    }

    /// Simulates power loss now (as a planned crash would), without counting an operation.
    pub fn crash_now(&self) {
        self.model.lock().crash();
    }
}

fn open_real(path: &Path, mode: OpenMode) -> io::Result<File> {
    if mode == OpenMode::Truncate {
        // Readable too, so that an fsync can record the contents.
        return OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path);
    }
    RealIo::open_file(path, mode)
}

impl Io for FaultIo {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn IoFile>> {
        let mut m = self.model.lock();
        m.begin(Class::Other, &|| format!("open {}", path.display()))?;
        let existed = m.current.contains_key(path);
        let file = open_real(path, mode)?;
        if !existed && mode != OpenMode::Read && mode != OpenMode::ReadWrite {
            m.new_file(path);
        }
        let fid = m.fid(path);
        Ok(Box::new(FaultFile {
            real: RealFile(file),
            fid,
            path: path.to_owned(),
            model: self.model.clone(),
        }))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut m = self.model.lock();
        m.begin(Class::Other, &|| format!("read {}", path.display()))?;
        std::fs::read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut m = self.model.lock();
        m.begin(Class::Other, &|| format!("rename {}", to.display()))?;
        std::fs::rename(from, to)?;
        if let Some(e) = m.current.remove(from)
            && m.tracked(to)
        {
            m.current.insert(to.to_owned(), e);
        }
        Ok(())
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut m = self.model.lock();
        m.begin(Class::Other, &|| format!("unlink {}", path.display()))?;
        std::fs::remove_file(path)?;
        m.current.remove(path);
        Ok(())
    }
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        let mut m = self.model.lock();
        m.begin(Class::Other, &|| format!("mkdir {}", path.display()))?;
        std::fs::create_dir(path)?;
        if m.tracked(path) {
            m.current.insert(path.to_owned(), Entry::Dir);
        }
        Ok(())
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let mut m = self.model.lock();
        m.begin(Class::Other, &|| format!("rmdir {}", path.display()))?;
        std::fs::remove_dir(path)?;
        m.current.remove(path);
        Ok(())
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let mut m = self.model.lock();
        m.begin(Class::Sync, &|| {
            format!("fsync directory {}", path.display())
        })?;
        std::fs::metadata(path)?;
        m.sync_dir(path);
        Ok(())
    }
    fn set_readonly(&self, path: &Path) -> io::Result<()> {
        let mut m = self.model.lock();
        m.begin(Class::Other, &|| format!("chmod {}", path.display()))?;
        RealIo.set_readonly(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        if self.model.lock().dead {
            return Err(dead_error());
        }
        RealIo.read_dir(path)
    }
    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        if self.model.lock().dead {
            return Err(dead_error());
        }
        std::fs::metadata(path)
    }
}

/// A file opened through [`FaultIo`].
#[derive(Debug)]
struct FaultFile {
    real: RealFile,
    fid: Option<u64>,
    path: PathBuf,
    model: Arc<Mutex<Model>>,
}

impl FaultFile {
    fn sync(&self, what: &str) -> io::Result<()> {
        let mut m = self.model.lock();
        m.begin(Class::Sync, &|| format!("{what} {}", self.path.display()))?;
        if let Some(fid) = self.fid {
            let len = self.real.0.metadata()?.len();
            let mut buf = vec![0u8; usize::try_from(len).map_err(io::Error::other)?];
            self.real.0.read_exact_at(&mut buf, 0)?;
            m.data.insert(fid, buf);
        }
        Ok(())
    }
}

impl IoFile for FaultFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut m = self.model.lock();
        m.begin(Class::Other, &|| format!("pread {}", self.path.display()))?;
        self.real.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut m = self.model.lock();
        let short = m.begin(Class::Write, &|| format!("pwrite {}", self.path.display()))?;
        if short {
            self.real.write_all_at(&buf[..buf.len() / 2], offset)?;
            return Err(io::Error::from_raw_os_error(ENOSPC));
        }
        self.real.write_all_at(buf, offset)
    }
    fn sync_all(&self) -> io::Result<()> {
        self.sync("fsync")
    }
    fn sync_data(&self) -> io::Result<()> {
        self.sync("fdatasync")
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut m = self.model.lock();
        m.begin(Class::Other, &|| {
            format!("ftruncate {}", self.path.display())
        })?;
        self.real.set_len(len)
    }
    fn file_len(&self) -> io::Result<u64> {
        if self.model.lock().dead {
            return Err(dead_error());
        }
        self.real.file_len()
    }
    fn map_readonly(&self) -> io::Result<Mmap> {
        let mut m = self.model.lock();
        m.begin(Class::Other, &|| format!("mmap {}", self.path.display()))?;
        self.real.map_readonly()
    }
    fn lock(&self) -> io::Result<()> {
        // Not under the model's mutex: `flock` blocks while another handle holds it.
        if self.model.lock().dead {
            return Err(dead_error());
        }
        self.real.lock()
    }
    fn try_lock(&self) -> io::Result<bool> {
        if self.model.lock().dead {
            return Err(dead_error());
        }
        self.real.try_lock()
    }
    fn unlock(&self) -> io::Result<()> {
        self.real.unlock()
    }
}
