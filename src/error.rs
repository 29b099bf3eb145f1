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

    /// An argument of the request is invalid: the field it is in and the rule it breaks.
    #[error("invalid {field}: {reason}")]
    InvalidArgument {
        /// The argument or field, e.g. `node key`, `embedding`, `query`.
        field: &'static str,
        /// The rule it breaks and what was found.
        reason: String,
    },

    /// A documented limit was exceeded (batch size, id space, segment size, ...).
    #[error("{what} is {found}, the limit is {limit}")]
    LimitExceeded {
        /// What was counted.
        what: &'static str,
        /// The count the request reached.
        found: u64,
        /// The limit.
        limit: u64,
    },

    /// A path that should hold (or receive) a database does not: a regular file, a directory
    /// holding something else, or a directory without a MANIFEST when creation is off.
    #[error("{path}: {reason}")]
    NotADatabase {
        /// The path.
        path: PathBuf,
        /// What is there instead and what to do.
        reason: String,
    },

    /// An engine invariant did not hold: a bug, reported instead of a panic.
    #[error("internal error: {0}; please report it")]
    Internal(String),

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

    /// A conditional batch ([`WriteBatch::expect_lsn`](crate::WriteBatch::expect_lsn),
    /// [`WriteBatch::expect_node`](crate::WriteBatch::expect_node)) found that what it
    /// was computed from changed in the meantime; nothing was written.
    #[error("{what} changed since it was read; take a new snapshot and retry")]
    Conflict {
        /// What changed: "the store (LSN 7, now 9)", "node \"alice\"".
        what: String,
    },
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

    /// An invalid-argument error for `field`.
    pub fn invalid_arg(field: &'static str, reason: impl Into<String>) -> Error {
        Error::InvalidArgument {
            field,
            reason: reason.into(),
        }
    }

    /// An invalid-input error whose field is the request as a whole (prefer
    /// [`Error::invalid_arg`] where the field is known).
    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::invalid_arg("input", msg)
    }

    /// A limit error.
    pub fn limit(what: &'static str, found: u64, limit: u64) -> Error {
        Error::LimitExceeded { what, found, limit }
    }

    /// A path that is not (and cannot become) a database.
    pub fn not_a_database(path: impl Into<PathBuf>, reason: impl Into<String>) -> Error {
        Error::NotADatabase {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// Whether this error reports a damaged file (as opposed to bad input or I/O trouble).
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::Corrupt { .. } | Error::ForeignFile { .. } | Error::UnsupportedVersion { .. }
        )
    }
}
