//! Appending to and scanning one WAL file.
//!
//! The writer appends with positioned writes at the end of the last valid record it knows,
//! so a torn tail left by a crashed process is overwritten only after it was truncated away.
//! The scanner reads from any offset (a process tailing commits made by other processes
//! starts where it stopped) and classifies what ends the valid prefix: a clean end, a torn
//! tail (no valid record follows), or corruption (a valid record follows a bad one).

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::io::{Io, IoFile, OpenMode};

use crate::error::{Error, Result};
use crate::format::wal::{FRAME_LEN, Frame, WAL_HEADER_LEN, WalHeader, decode_record};
use crate::format::{FORMAT_VERSION, FORMAT_VERSION_MIN};
use crate::graph::Lsn;

/// An open WAL file, for reading and (by the lock holder) appending.
#[derive(Debug)]
pub struct WalFile {
    file: Box<dyn IoFile>,
    path: PathBuf,
    /// The parsed header.
    pub header: WalHeader,
}

/// What a scan found.
#[derive(Debug, Default)]
pub struct WalScan {
    /// The bytes read, starting at the scan offset.
    pub buf: Vec<u8>,
    /// Valid records: LSN and payload range within `buf`.
    pub records: Vec<(Lsn, Range<usize>)>,
    /// File offset just past the last valid record.
    pub end: u64,
    /// Set when bytes after `end` do not form a valid record (a torn write, or a record
    /// another process is still writing): the reason.
    pub torn: Option<String>,
    /// Bytes after `end`.
    pub trailing_bytes: u64,
}

impl WalFile {
    /// Creates a new WAL file with `header`, fsyncs it and its directory.
    ///
    /// # Errors
    /// I/O errors; an existing file of that name is an error (never overwritten).
    pub fn create(io: &dyn Io, dir: &Path, name: &str, header: WalHeader) -> Result<WalFile> {
        let path = dir.join(name);
        let file = io
            .open(&path, OpenMode::CreateNew)
            .map_err(|e| Error::io(&path, e))?;
        file.write_all_at(&header.encode(), 0)
            .map_err(|e| Error::io(&path, e))?;
        file.sync_all().map_err(|e| Error::io(&path, e))?;
        super::fs::sync_dir(io, dir)?;
        Ok(WalFile { file, path, header })
    }

    /// Opens an existing WAL file and checks its header against `db_id`.
    ///
    /// # Errors
    /// I/O errors, a damaged header, a foreign database id or an unsupported version.
    pub fn open(io: &dyn Io, path: &Path, db_id: u128, writable: bool) -> Result<WalFile> {
        let mode = if writable {
            OpenMode::ReadWrite
        } else {
            OpenMode::Read
        };
        let file = io.open(path, mode).map_err(|e| Error::io(path, e))?;
        let mut buf = [0u8; WAL_HEADER_LEN];
        let len = file.file_len().map_err(|e| Error::io(path, e))?;
        if len < WAL_HEADER_LEN as u64 {
            return Err(Error::corrupt(
                path,
                0,
                format!("WAL file is {len} bytes, shorter than its header"),
            ));
        }
        file.read_exact_at(&mut buf, 0)
            .map_err(|e| Error::io(path, e))?;
        let header =
            WalHeader::decode(&buf).map_err(|e| Error::corrupt(path, e.offset as u64, e.what))?;
        if !(FORMAT_VERSION_MIN..=FORMAT_VERSION).contains(&header.version) {
            return Err(Error::UnsupportedVersion {
                path: path.to_owned(),
                found: header.version,
                min: FORMAT_VERSION_MIN,
                max: FORMAT_VERSION,
            });
        }
        if header.db_id != db_id {
            return Err(Error::ForeignFile {
                path: path.to_owned(),
                found: header.db_id,
                expected: db_id,
            });
        }
        Ok(WalFile {
            file,
            path: path.to_owned(),
            header,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current file length.
    ///
    /// # Errors
    /// I/O errors of `fstat`.
    pub fn file_len(&self) -> Result<u64> {
        self.file.file_len().map_err(|e| Error::io(&self.path, e))
    }

    /// Offset of the first record.
    pub fn data_start() -> u64 {
        WAL_HEADER_LEN as u64
    }

    /// Reads and validates records from `offset` (which must be a record boundary) to the
    /// end of the file, expecting LSNs from `expected_lsn` on.
    ///
    /// # Errors
    /// I/O errors; `Corrupt` naming the file and offset when a bad record is followed by a
    /// valid one (never a silent skip).
    pub fn scan(&self, offset: u64, expected_lsn: Lsn) -> Result<WalScan> {
        let len = self.file_len()?;
        let mut scan = WalScan {
            end: offset,
            ..WalScan::default()
        };
        if len <= offset {
            return Ok(scan);
        }
        let n = usize::try_from(len - offset)
            .map_err(|_| Error::corrupt(&self.path, offset, "WAL too large"))?;
        scan.buf = vec![0u8; n];
        self.file
            .read_exact_at(&mut scan.buf, offset)
            .map_err(|e| Error::io(&self.path, e))?;
        let db_id = self.header.db_id;
        let mut pos = 0usize;
        let mut lsn = expected_lsn;
        while pos < scan.buf.len() {
            match decode_record(&scan.buf[pos..], db_id, lsn) {
                Frame::Record { len, .. } => {
                    scan.records.push((lsn, pos + FRAME_LEN..pos + len));
                    pos += len;
                    lsn += 1;
                }
                Frame::Invalid(reason) => {
                    if let Some(later) = find_valid_frame(&scan.buf, pos + 1, db_id, lsn) {
                        return Err(Error::corrupt(
                            &self.path,
                            offset + pos as u64,
                            format!(
                                "{reason}, but a valid record follows at byte {}; the log is damaged in the middle \
                                 (run `hopgraph check`; restore from a backup)",
                                offset + later as u64
                            ),
                        ));
                    }
                    scan.torn = Some(reason);
                    break;
                }
            }
        }
        scan.end = offset + pos as u64;
        scan.trailing_bytes = len - scan.end;
        Ok(scan)
    }

    /// Truncates the file to `len` (dropping a torn tail) and fsyncs it. Only the holder of
    /// the writer lock calls this, and WAL files are never memory-mapped.
    ///
    /// # Errors
    /// I/O errors.
    pub fn truncate(&self, len: u64) -> Result<()> {
        self.file
            .set_len(len)
            .map_err(|e| Error::io(&self.path, e))?;
        self.file.sync_all().map_err(|e| Error::io(&self.path, e))
    }

    /// Writes `bytes` at `offset` (the end of the valid log).
    ///
    /// # Errors
    /// I/O errors.
    pub fn write_at(&self, bytes: &[u8], offset: u64) -> Result<()> {
        self.file
            .write_all_at(bytes, offset)
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Makes written records durable (`fdatasync`).
    ///
    /// # Errors
    /// I/O errors; the caller must treat them as fatal for the writer.
    pub fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }
}

/// Looks for any frame at or after `from` whose checksum verifies with an LSN of at least
/// `min_lsn`. Used only when a record failed, to tell a torn tail from mid-log damage.
fn find_valid_frame(buf: &[u8], from: usize, db_id: u128, min_lsn: Lsn) -> Option<usize> {
    (from..buf.len().saturating_sub(FRAME_LEN - 1)).find(|&p| {
        let b = &buf[p..];
        let mut lsn = [0u8; 8];
        lsn.copy_from_slice(&b[8..16]);
        let lsn = u64::from_le_bytes(lsn);
        lsn >= min_lsn
            && lsn < min_lsn.saturating_add(1 << 32)
            && matches!(decode_record(b, db_id, lsn), Frame::Record { .. })
    })
}
