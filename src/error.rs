//! The error type of the library.
//!
//! Errors are user interface: each variant's message carries the evidence (path, offset,
//! expected and found values) and, where there is one, what to do next. Corruption is its own
//! kind so that callers can tell a damaged database from a bad request.

use std::io;
use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in hopgraph.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error on a named file.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// A file of the database is damaged. The database is not changed by the attempt.
    #[error("corrupt database file {path} at byte {offset}: {detail}")]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// Byte offset of the first bad byte found (or of the structure that failed).
        offset: u64,
        /// What was expected and what was found.
        detail: String,
    },

    /// A file was written by a newer (or unknown) format version.
    #[error(
        "{path} has format version {found}, this build reads versions {min}..={max}; \
         upgrade hopgraph to open it"
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Version in the file.
        found: u32,
        /// Oldest supported version.
        min: u32,
        /// Newest supported version.
        max: u32,
    },

    /// A file belongs to another database (its database id differs from the manifest's).
    #[error("{path} belongs to another database (id {found:032x}, expected {expected:032x})")]
    ForeignFile {
        /// The stray file.
        path: PathBuf,
        /// Database id in the file.
        found: u128,
        /// Database id of this database.
        expected: u128,
    },

    /// The request is invalid: bad key, value out of range, limit exceeded.
    #[error("invalid input: {0}")]
    InvalidInput(String),

    /// A node key that the operation needs does not exist.
    #[error("node not found: {key}")]
    NodeNotFound {
        /// The missing key.
        key: String,
    },

    /// A node key that must be new already exists.
    #[error("node already exists: {key}")]
    NodeExists {
        /// The existing key.
        key: String,
    },

    /// An earlier write or fsync failed; this handle refuses further writes because the state
    /// of the log on disk is unknown. Reopen the database to recover.
    #[error("writes are disabled after an earlier failure ({0}); reopen the database")]
    WriterPoisoned(String),

    /// A query ran out of its work budget (visited nodes or time) before it could answer.
    #[error(
        "the query stopped after visiting {visited} nodes, its budget; raise the limit or narrow the query"
    )]
    LimitReached {
        /// Nodes visited when the budget ran out.
        visited: u64,
    },

    /// The database was opened read-only.
    #[error("the database is open read-only")]
    ReadOnly,
}

impl Error {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A corruption error at `offset` of `path`.
    pub fn corrupt(path: impl Into<PathBuf>, offset: u64, detail: impl Into<String>) -> Error {
        Error::Corrupt {
            path: path.into(),
            offset,
            detail: detail.into(),
        }
    }

    /// An invalid-input error.
    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::InvalidInput(msg.into())
    }

    /// Whether this error reports a damaged file (as opposed to bad input or I/O trouble).
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::Corrupt { .. } | Error::ForeignFile { .. } | Error::UnsupportedVersion { .. }
        )
    }
}
