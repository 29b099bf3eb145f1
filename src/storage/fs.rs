//! File-system primitives built on [`Io`]: atomic replacement, directory fsync, durable
//! directory creation, read-only mapping.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::io::{Io, IoFile, OpenMode};
use crate::error::{Error, Result};

/// Fsyncs a directory so that renames and creations inside it are durable.
///
/// # Errors
/// I/O errors, with the directory's path.
pub fn sync_dir(io: &dyn Io, dir: &Path) -> Result<()> {
    io.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

/// Creates `path` and every missing ancestor durably: each new directory is created, then
/// fsynced, then its parent is fsynced (which makes its entry durable), from the first
/// ancestor that already existed downwards. Returns the directories created, outermost
/// first, so that a failed open can remove them again. A directory that appears
/// concurrently counts as existing.
///
/// # Errors
/// I/O errors with the path involved; a component that exists but is not a directory is
/// `InvalidArgument` naming it.
pub fn create_dir_durable(io: &dyn Io, path: &Path) -> Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut at = path;
    loop {
        match io.metadata(at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(Error::not_a_database(
                    path,
                    format!(
                        "{} is not a directory; cannot create a database under it",
                        at.display()
                    ),
                ));
            }
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                missing.push(at.to_owned());
            }
            Err(e) => return Err(Error::io(at, e)),
        }
        match at.parent() {
            // `Path::new("a").parent()` is `Some("")`: the current directory, which exists.
            Some(p) if !p.as_os_str().is_empty() => at = p,
            _ => break,
        }
    }
    let mut created = Vec::with_capacity(missing.len());
    for dir in missing.into_iter().rev() {
        match io.create_dir(&dir) {
            Ok(()) => created.push(dir.clone()),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io(&dir, e)),
        }
        sync_dir(io, &dir)?;
        let parent = dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        sync_dir(io, parent)?;
    }
    Ok(created)
}

/// Replaces `dir/name` atomically with `bytes`: write `name.tmp`, fsync it, rename it over
/// `name`, fsync the directory. A crash leaves either the old or the new file.
///
/// # Errors
/// I/O errors, with the path involved.
pub fn write_atomic(io: &dyn Io, dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let path = dir.join(name);
    {
        let f = io
            .open(&tmp, OpenMode::Truncate)
            .map_err(|e| Error::io(&tmp, e))?;
        f.write_all_at(bytes, 0).map_err(|e| Error::io(&tmp, e))?;
        f.sync_all().map_err(|e| Error::io(&tmp, e))?;
    }
    io.rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    sync_dir(io, dir)
}

/// Opens a file read-only.
///
/// # Errors
/// I/O errors, with the path.
pub fn open_read(io: &dyn Io, path: &Path) -> Result<Box<dyn IoFile>> {
    io.open(path, OpenMode::Read)
        .map_err(|e| Error::io(path, e))
}

/// Maps a whole file read-only.
///
/// Contract (what makes the `unsafe` mapping inside [`IoFile::map_readonly`] sound): every
/// file hopgraph maps is a segment written once, fsynced and renamed into place before it
/// is ever opened, and no hopgraph process opens a segment for writing again or truncates
/// it; a segment is only unlinked, which keeps the mapping valid on Unix. Modification by
/// other programs is outside the contract (DESIGN.md, "Memory-mapped segments and
/// soundness").
///
/// # Errors
/// I/O errors (including an empty file, which cannot be mapped), with the path.
pub fn map_readonly(file: &dyn IoFile, path: &Path) -> Result<Mmap> {
    let len = file.file_len().map_err(|e| Error::io(path, e))?;
    if len == 0 {
        return Err(Error::corrupt(path, 0, "file is empty"));
    }
    file.map_readonly().map_err(|e| Error::io(path, e))
}

/// Asks the kernel to map `map` with huge pages where it can (Linux: `MADV_HUGEPAGE`), so
/// that random reads of a large segment miss the TLB far less often. The kernel then
/// uses a 2 MiB entry for every 2 MiB of the file that the page cache holds as one huge
/// folio: what it reads in for this mapping from now on, and what a segment writer
/// wrote in aligned 2 MiB writes (see [`super::chunk_writer`]); the rest stays in small
/// pages. Call it before the first read of the mapping. Returns whether the advice was
/// taken (not on other systems, nor when transparent huge pages are disabled).
pub fn advise_huge_pages(map: &Mmap) -> bool {
    #[cfg(target_os = "linux")]
    {
        map.advise(memmap2::Advice::HugePage).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = map;
        false
    }
}
