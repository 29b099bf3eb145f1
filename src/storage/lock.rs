//! Inter-process locks: `flock(2)` on a file of the database directory, via
//! [`IoFile::lock`] (`std::fs::File::lock` on the real file system). The writer lock
//! (`LOCK`, [`WriterLock::open`]) serializes writers; the index lock (`INDEX.LOCK`,
//! [`WriterLock::open_named`]) lets one process at a time build vector graphs, which take
//! minutes and whose second build would be thrown away.
//!
//! `flock` locks belong to an open file description, so two handles in one process exclude
//! each other as two processes do; `fcntl` record locks would be silently dropped when any
//! handle of the process closes the file. The lock is held only for the span of one commit
//! group, checkpoint or compaction step. The kernel releases it when a process dies, so a
//! stale lock file never blocks anyone.

use std::path::{Path, PathBuf};

use super::io::{Io, IoFile, OpenMode};

use crate::error::{Error, Result};

/// A lock file of one database handle.
#[derive(Debug)]
pub struct WriterLock {
    file: Box<dyn IoFile>,
    path: PathBuf,
}

/// Holds the exclusive lock until dropped.
#[derive(Debug)]
pub struct WriterLockGuard<'a> {
    lock: &'a WriterLock,
}

impl WriterLock {
    /// Opens (creating if needed) the lock file of `dir`. The file never holds data, so
    /// its creation is not fsynced: after a crash it may be missing and is simply created
    /// again.
    ///
    /// # Errors
    /// I/O errors, with the path.
    pub fn open(io: &dyn Io, dir: &Path) -> Result<WriterLock> {
        WriterLock::open_named(io, dir, super::LOCK_FILE)
    }

    /// Opens (creating if needed) the lock file `name` of `dir`, as [`WriterLock::open`].
    ///
    /// # Errors
    /// As [`WriterLock::open`].
    pub fn open_named(io: &dyn Io, dir: &Path, name: &str) -> Result<WriterLock> {
        let path = dir.join(name);
        let file = io.open(&path, OpenMode::Create).map_err(|e| {
            let kind = e.kind();
            if matches!(
                kind,
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
            ) {
                // Say what to do: the database can still be queried.
                let hint = format!("{e}; cannot write here, open the database read-only");
                Error::io(&path, std::io::Error::new(kind, hint))
            } else {
                Error::io(&path, e)
            }
        })?;
        Ok(WriterLock { file, path })
    }

    /// Blocks until this handle holds the exclusive lock.
    ///
    /// # Errors
    /// I/O errors from `flock`.
    pub fn lock(&self) -> Result<WriterLockGuard<'_>> {
        self.file.lock().map_err(|e| Error::io(&self.path, e))?;
        Ok(WriterLockGuard { lock: self })
    }

    /// The exclusive lock if no other handle holds it.
    ///
    /// # Errors
    /// I/O errors from `flock`.
    pub fn try_lock(&self) -> Result<Option<WriterLockGuard<'_>>> {
        let got = self.file.try_lock().map_err(|e| Error::io(&self.path, e))?;
        Ok(got.then_some(WriterLockGuard { lock: self }))
    }
}

impl Drop for WriterLockGuard<'_> {
    fn drop(&mut self) {
        // Unlock errors cannot be acted on; closing the descriptor would release it anyway.
        let _ = self.lock.file.unlock();
    }
}
