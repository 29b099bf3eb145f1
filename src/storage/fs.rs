//! File-system primitives: atomic replacement, directory fsync, read-only mapping.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Error, Result};

/// Fsyncs a directory so that renames and creations inside it are durable.
///
/// # Errors
/// I/O errors, with the directory's path.
pub fn sync_dir(dir: &Path) -> Result<()> {
    let d = File::open(dir).map_err(|e| Error::io(dir, e))?;
    d.sync_all().map_err(|e| Error::io(dir, e))
}

/// Replaces `dir/name` atomically with `bytes`: write `name.tmp`, fsync it, rename it over
/// `name`, fsync the directory. A crash leaves either the old or the new file.
///
/// # Errors
/// I/O errors, with the path involved.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let path = dir.join(name);
    {
        let mut f = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
        f.sync_all().map_err(|e| Error::io(&tmp, e))?;
    }
    fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    sync_dir(dir)
}

/// Opens a file read-only.
///
/// # Errors
/// I/O errors, with the path.
pub fn open_read(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .open(path)
        .map_err(|e| Error::io(path, e))
}

/// Maps a whole file read-only.
///
/// # Errors
/// I/O errors (including an empty file, which cannot be mapped), with the path.
pub fn map_readonly(file: &File, path: &Path) -> Result<Mmap> {
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if len == 0 {
        return Err(Error::corrupt(path, 0, "file is empty"));
    }
    // SAFETY: memmap2 requires that the file is not modified or truncated while mapped.
    // Every file hopgraph maps is a segment written once, fsynced and renamed into place
    // before it is ever opened, and no hopgraph process opens a segment for writing again or
    // truncates it; a segment is only unlinked, which keeps the mapping valid on Unix.
    // Modification by other programs is outside the contract (DESIGN.md, "Memory-mapped
    // segments and soundness").
    unsafe { Mmap::map(file) }.map_err(|e| Error::io(path, e))
}
