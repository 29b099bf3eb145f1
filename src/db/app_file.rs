//! Application files: small files a program built on the engine keeps in the database
//! directory beside the engine's own (the memory layer's embedding-model record is one),
//! read and replaced through the [`Io`](crate::storage::io::Io) seam, so that fault
//! injection covers them and the writer lock orders them with commits and checkpoints.
//!
//! The engine does not read their contents. Names are restricted (see
//! [`check_app_file_name`]) so that they can never be taken for, or clobber, one of the
//! engine's files (`MANIFEST`, `LOCK`, `wal-*.log`, `seg-*.hgs`, `*.tmp`).

use std::io;

use super::handle::Database;
use crate::error::{Error, Result};
use crate::storage::fs::write_atomic;

/// Largest application file, in bytes (they are meant to be small records).
pub const APP_FILE_BYTES_MAX: usize = 1 << 20;

/// Longest application file name, in bytes.
const APP_FILE_NAME_BYTES_MAX: usize = 64;

/// Checks an application file name: 1 to 64 bytes of `a-z 0-9 _ - .`, starting with a
/// letter or digit, ending in `.json`.
fn check_app_file_name(name: &str) -> Result<()> {
    let ok = name.len() <= APP_FILE_NAME_BYTES_MAX
        && name.ends_with(".json")
        && name.len() > ".json".len()
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name.bytes().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'-' | b'.')
        });
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_arg(
            "application file name",
            format!(
                "must be 1 to {APP_FILE_NAME_BYTES_MAX} bytes of a-z 0-9 _ - . starting with a \
                 letter or digit and ending in .json, got {name:?}"
            ),
        ))
    }
}

impl Database {
    /// The application file `name` of this database (see [`Database::write_app_file`]),
    /// `None` when there is none.
    ///
    /// ```
    /// # fn main() -> hopgraph::Result<()> {
    /// # let tmp = std::env::temp_dir().join(format!("hopgraph-app-file-doc-{}", std::process::id()));
    /// let db = hopgraph::Database::open(&tmp)?;
    /// assert_eq!(db.read_app_file("settings.json")?, None);
    /// db.write_app_file("settings.json", br#"{"theme": "dark"}"#)?;
    /// assert_eq!(db.read_app_file("settings.json")?.as_deref(), Some(&br#"{"theme": "dark"}"#[..]));
    /// // Names that could be the engine's own files are refused.
    /// assert!(db.write_app_file("MANIFEST", b"").is_err());
    /// # drop(db); std::fs::remove_dir_all(&tmp).ok();
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `InvalidArgument` for a name outside the rule of [`Database::write_app_file`];
    /// `LimitExceeded` for a file larger than [`APP_FILE_BYTES_MAX`] (it is not read);
    /// `Io` when the file cannot be read.
    pub fn read_app_file(&self, name: &str) -> Result<Option<Vec<u8>>> {
        check_app_file_name(name)?;
        let io = self.shared.io();
        let path = self.shared.dir.join(name);
        match io.metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
            Ok(m) if m.len() > APP_FILE_BYTES_MAX as u64 => {
                return Err(Error::limit(
                    "application file size",
                    m.len(),
                    APP_FILE_BYTES_MAX as u64,
                ));
            }
            Ok(_) => {}
        }
        match io.read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            // Removed between the two calls: there is none.
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// Replaces the application file `name` with `bytes`, atomically and durably (a
    /// temporary file, fsynced, renamed over the old one, the directory fsynced: a crash
    /// leaves the old file or the new one), under the writer lock, so that it is ordered
    /// with the commits and checkpoints of every handle and process sharing the database.
    /// `name` is 1 to 64 bytes of `a-z 0-9 _ - .`, starts with a letter or digit and ends
    /// in `.json`, so it is never one of the engine's files.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name; `LimitExceeded` for more than
    /// [`APP_FILE_BYTES_MAX`] bytes; `ReadOnly` on a read-only handle; `Io` (the old file,
    /// if any, is then left as it was).
    pub fn write_app_file(&self, name: &str, bytes: &[u8]) -> Result<()> {
        self.put_app_file(name, bytes, true).map(|_| ())
    }

    /// [`Database::write_app_file`] only when there is no file `name` yet, decided under
    /// the writer lock: of several handles or processes creating it at once, exactly one
    /// writes. Returns whether this call wrote it.
    ///
    /// ```
    /// # fn main() -> hopgraph::Result<()> {
    /// # let tmp = std::env::temp_dir().join(format!("hopgraph-app-create-doc-{}", std::process::id()));
    /// let db = hopgraph::Database::open(&tmp)?;
    /// assert!(db.create_app_file("owner.json", b"\"first\"")?);
    /// assert!(!db.create_app_file("owner.json", b"\"second\"")?);
    /// assert_eq!(db.read_app_file("owner.json")?.as_deref(), Some(&b"\"first\""[..]));
    /// # drop(db); std::fs::remove_dir_all(&tmp).ok();
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Database::write_app_file`].
    pub fn create_app_file(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        self.put_app_file(name, bytes, false)
    }

    fn put_app_file(&self, name: &str, bytes: &[u8], replace: bool) -> Result<bool> {
        check_app_file_name(name)?;
        if bytes.len() > APP_FILE_BYTES_MAX {
            return Err(Error::limit(
                "application file size",
                bytes.len() as u64,
                APP_FILE_BYTES_MAX as u64,
            ));
        }
        let lock = self.shared.lock.as_ref().ok_or(Error::ReadOnly)?;
        // This handle's writers, then every other handle's and process's.
        let _writer = self.shared.writer.lock();
        let _guard = lock.lock()?;
        let io = self.shared.io();
        if !replace {
            let path = self.shared.dir.join(name);
            match io.metadata(&path) {
                Ok(_) => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&path, e)),
            }
        }
        write_atomic(io, &self.shared.dir, name, bytes)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["a.json", "embedding-model.json", "x_1.v2.json"] {
            assert!(check_app_file_name(ok).is_ok(), "{ok}");
        }
        let long = format!("{}.json", "a".repeat(60));
        for bad in [
            "",
            ".json",
            "MANIFEST",
            "LOCK",
            "wal-1.log",
            "seg-1.hgs",
            "a.json.tmp",
            "../a.json",
            "a/b.json",
            "-a.json",
            "A.json",
            long.as_str(),
        ] {
            assert!(check_app_file_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn round_trip_replace_and_read_only() {
        let tmp = tempfile::tempdir().unwrap();
        let db = Database::open(tmp.path()).unwrap();
        assert_eq!(db.read_app_file("r.json").unwrap(), None);
        assert!(db.create_app_file("r.json", b"0").unwrap());
        assert!(!db.create_app_file("r.json", b"x").unwrap());
        assert_eq!(
            db.read_app_file("r.json").unwrap().as_deref(),
            Some(&b"0"[..])
        );
        db.write_app_file("r.json", b"1").unwrap();
        db.write_app_file("r.json", b"22").unwrap();
        assert_eq!(
            db.read_app_file("r.json").unwrap().as_deref(),
            Some(&b"22"[..])
        );
        assert!(matches!(
            db.write_app_file("r.json", &vec![0; APP_FILE_BYTES_MAX + 1]),
            Err(Error::LimitExceeded { .. })
        ));
        drop(db);
        let ro =
            Database::open_with(tmp.path(), crate::db::Options::default().read_only(true)).unwrap();
        assert_eq!(
            ro.read_app_file("r.json").unwrap().as_deref(),
            Some(&b"22"[..])
        );
        assert!(matches!(
            ro.write_app_file("r.json", b"3"),
            Err(Error::ReadOnly)
        ));
        // Reopening (which collects stale files) keeps it.
        drop(ro);
        let db = Database::open(tmp.path()).unwrap();
        assert_eq!(
            db.read_app_file("r.json").unwrap().as_deref(),
            Some(&b"22"[..])
        );
    }
}
