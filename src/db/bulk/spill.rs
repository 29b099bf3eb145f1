//! The scratch files of an out-of-core bulk load and their removal.
//!
//! Every file is `bulk-<segment id>-<name>.tmp` in the database's directory: on the same
//! file system as the segment, and a name that `collect_garbage` removes on the next
//! writable open, so a crash leaves nothing for long. [`Spill`] removes every file it made
//! when it is dropped: after the load succeeds, and when it fails or panics. The files are
//! never fsynced: nothing needs them after the load, and a crash makes them garbage.
//!
//! [`Runs`] is one file of sorted runs of packed entries (see `external`), written run after
//! run and read back through a [`Merge`](super::merge::Merge).

use std::path::PathBuf;

use crate::db::build::SpillFile;
use crate::error::{Error, Result};
use crate::storage::io::Io;

/// The scratch files of one bulk load; removes them when dropped.
pub(super) struct Spill<'a> {
    io: &'a dyn Io,
    dir: &'a std::path::Path,
    prefix: String,
    made: Vec<PathBuf>,
}

impl<'a> Spill<'a> {
    /// Scratch files in `dir` for the load that writes segment `segment`.
    pub fn new(io: &'a dyn Io, dir: &'a std::path::Path, segment: u64) -> Spill<'a> {
        Spill {
            io,
            dir,
            prefix: format!("bulk-{segment}-"),
            made: Vec::new(),
        }
    }

    /// Creates scratch file `name` with a write buffer of `buffer` bytes. A file of that
    /// name is a crashed load's leftover (the caller holds the writer lock) and is replaced.
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn file(&mut self, name: &str, buffer: usize) -> Result<SpillFile> {
        let path = self.dir.join(format!("{}{name}.tmp", self.prefix));
        match self.io.remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io(&path, e));
            }
            _ => {}
        }
        self.made.push(path.clone());
        SpillFile::create(self.io, &path, buffer)
    }

    /// Closes and removes `file` now (its disk space is free for the next phase).
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn remove(&mut self, file: SpillFile) -> Result<()> {
        let path = file.path().to_path_buf();
        drop(file);
        self.io
            .remove_file(&path)
            .map_err(|e| Error::io(&path, e))?;
        // Forgotten only once gone: a failed unlink is tried again on drop.
        self.made.retain(|p| *p != path);
        Ok(())
    }
}

impl Drop for Spill<'_> {
    fn drop(&mut self) {
        for path in self.made.drain(..) {
            // Best effort: what remains is removed by the next writable open.
            let _ = self.io.remove_file(&path);
        }
    }
}

/// Sorted runs of packed entries back to back in one scratch file.
#[derive(Debug)]
pub(super) struct Runs {
    pub file: SpillFile,
    /// Each run's first entry and length, in entries.
    pub runs: Vec<(u64, u64)>,
}

impl Runs {
    /// Runs in `file`.
    pub fn new(file: SpillFile) -> Runs {
        Runs {
            file,
            runs: Vec::new(),
        }
    }

    /// Appends the sorted run `entries` (nothing for none).
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn push(&mut self, entries: &[u128]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let first = self.file.len() / 16;
        self.file.append_values(entries)?;
        self.runs.push((first, entries.len() as u64));
        Ok(())
    }
}
