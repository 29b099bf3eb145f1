//! The one interface through which the engine touches the file system.
//!
//! Every file operation of the storage layer — open/create, positioned read and write,
//! fsync and fdatasync, set_len, rename, unlink, whole-file read, mmap, directory create,
//! directory fsync, listing and `stat` — goes through an [`Io`] (paths) or an [`IoFile`]
//! (an open file). [`RealIo`] is the operating system and the default; tests choose another
//! implementation through [`Options::io`](crate::Options::io), e.g. the fault injector
//! [`FaultIo`](super::fault::FaultIo), which fails a chosen operation or simulates power
//! loss. The cost is one dynamic dispatch per system call; nothing is buffered here.
//!
//! Methods return plain `std::io::Result`: callers attach the path with
//! [`Error::io`](crate::Error::io), as they did when calling `std::fs` directly.

use std::ffi::OsString;
use std::fmt;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;

/// How [`Io::open`] opens a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// An existing file, read-only.
    Read,
    /// An existing file, read and write.
    ReadWrite,
    /// A new file, read and write; an existing file of that name is an error.
    CreateNew,
    /// Read and write, created empty when missing, contents kept otherwise (the lock file).
    Create,
    /// Write only, created when missing, truncated to zero otherwise (temporary files).
    Truncate,
}

/// File-system operations by path. Implementations must be usable from many threads.
pub trait Io: Send + Sync + fmt::Debug {
    /// Opens `path` as `mode` says.
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn IoFile>>;
    /// Reads a whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Renames `from` to `to`, replacing `to` atomically.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Unlinks a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Creates one directory (its parent must exist).
    fn create_dir(&self, path: &Path) -> io::Result<()>;
    /// Removes an empty directory.
    fn remove_dir(&self, path: &Path) -> io::Result<()>;
    /// Fsyncs a directory, making creations, renames and unlinks inside it durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Makes a file read-only (mode 0444).
    fn set_readonly(&self, path: &Path) -> io::Result<()>;
    /// The names of a directory's entries.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>>;
    /// `stat` (following symbolic links).
    fn metadata(&self, path: &Path) -> io::Result<Metadata>;
}

/// Operations on one open file.
pub trait IoFile: Send + Sync + fmt::Debug {
    /// Fills `buf` from `offset` (an error if the file ends first).
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `buf` at `offset`.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// `fsync`: data and metadata.
    fn sync_all(&self) -> io::Result<()>;
    /// `fdatasync`: data and the metadata needed to read it.
    fn sync_data(&self) -> io::Result<()>;
    /// Truncates or extends the file.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// The file's length.
    fn file_len(&self) -> io::Result<u64>;
    /// Maps the whole file read-only. The caller guarantees the contract of
    /// [`fs::map_readonly`](super::fs::map_readonly): nobody modifies or truncates the file
    /// while it is mapped. The map must be a shared mapping of the file itself (not a copy
    /// in anonymous memory): `SegmentFile::verify_releasing` drops its pages, which the
    /// next read faults back in from the file.
    fn map_readonly(&self) -> io::Result<Mmap>;
    /// Takes the exclusive `flock`, blocking.
    fn lock(&self) -> io::Result<()>;
    /// Takes the exclusive `flock` if no other open file description holds it: whether
    /// it did.
    fn try_lock(&self) -> io::Result<bool>;
    /// Releases the `flock`.
    fn unlock(&self) -> io::Result<()>;
}

/// The operating system's file system: each method is the `std::fs` call of its name.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealIo;

/// The shared default [`Io`].
pub fn real() -> Arc<dyn Io> {
    Arc::new(RealIo)
}

impl RealIo {
    /// Opens a real file (also used by wrappers such as the fault injector).
    ///
    /// # Errors
    /// The operating system's.
    pub fn open_file(path: &Path, mode: OpenMode) -> io::Result<File> {
        let mut o = OpenOptions::new();
        match mode {
            OpenMode::Read => o.read(true),
            OpenMode::ReadWrite => o.read(true).write(true),
            OpenMode::CreateNew => o.read(true).write(true).create_new(true),
            OpenMode::Create => o.read(true).write(true).create(true).truncate(false),
            OpenMode::Truncate => o.write(true).create(true).truncate(true),
        };
        o.open(path)
    }
}

impl Io for RealIo {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn IoFile>> {
        Ok(Box::new(RealFile(RealIo::open_file(path, mode)?)))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }
    fn set_readonly(&self, path: &Path) -> io::Result<()> {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o444))
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.file_name()))
            .collect()
    }
    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        std::fs::metadata(path)
    }
}

/// A real open file.
#[derive(Debug)]
pub struct RealFile(pub File);

impl IoFile for RealFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }
    fn sync_all(&self) -> io::Result<()> {
        self.0.sync_all()
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn file_len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn map_readonly(&self) -> io::Result<Mmap> {
        // SAFETY: memmap2 requires that the file is not modified or truncated while mapped.
        // `IoFile::map_readonly` passes that obligation to its caller, and the only caller,
        // `fs::map_readonly`, maps only segments, which no hopgraph process writes or
        // truncates after they are renamed into place (see its SAFETY comment).
        unsafe { Mmap::map(&self.0) }
    }
    fn lock(&self) -> io::Result<()> {
        loop {
            match self.0.lock() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }
    fn try_lock(&self) -> io::Result<bool> {
        loop {
            match self.0.try_lock() {
                Ok(()) => return Ok(true),
                Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
                Err(std::fs::TryLockError::Error(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(std::fs::TryLockError::Error(e)) => return Err(e),
            }
        }
    }
    fn unlock(&self) -> io::Result<()> {
        self.0.unlock()
    }
}
