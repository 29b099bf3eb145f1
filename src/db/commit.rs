//! Group commit, with the database's WAL behind it.
//!
//! The protocol (queue, leader, result hand-off, publication, poisoning) is
//! [`super::group`]'s; this file is the writer it drives. A leader takes the inter-process
//! lock, catches up with other processes' commits, resolves each batch in order into one
//! WAL record, writes all records with one positioned write and fsyncs once (in `Sync`
//! mode); the protocol then publishes the new state and hands each follower its result. A
//! commit is acknowledged only after its record is written (and synced); readers see it
//! only then. A failed write or fsync poisons the handle: the state of the log is unknown,
//! so no further write is attempted until the database is reopened.

use std::sync::Arc;

use super::batch::{WriteBatch, resolve};
use super::group::{self, GroupWriter, Written};
use super::handle::{Database, Writer};
use super::open::{RecoveryReport, catch_up};
use super::options::{CommitInfo, Durability};
use super::state::State;
use crate::error::{Error, Result};
use crate::format::record::{CommitPayload, encode_commit};
use crate::format::wal::encode_record;

/// The batches waiting for a group-commit leader.
pub(super) type CommitQueue = group::Queue<WriteBatch, Result<CommitInfo>>;

pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl Database {
    /// Commits `batch` atomically: all of it becomes visible and durable, or none of it.
    /// Returns after the WAL record is written (and fsynced in `Sync` mode).
    ///
    /// # Errors
    /// The batch's own errors (`InvalidArgument`, `NodeNotFound`, `NodeExists`) reject only
    /// this batch. I/O errors while writing the log poison the handle (`WriterPoisoned`
    /// afterwards). `ReadOnly` for read-only handles.
    pub fn commit(&self, batch: WriteBatch) -> Result<CommitInfo> {
        if self.shared.options.read_only {
            return Err(Error::ReadOnly);
        }
        group::commit(self, &self.shared.queue, &self.shared.writer, batch)
    }

    /// Runs the automatic checkpoint and compaction policies after a commit group.
    fn maybe_maintain(&self, w: &mut Writer) {
        let o = &self.shared.options;
        if w.poisoned.is_some() || w.wal_end < o.checkpoint_wal_bytes {
            return;
        }
        if let Err(e) = self.checkpoint_locked(w) {
            w.last_maintenance_error = Some(format!("automatic checkpoint failed: {e}"));
        }
    }
}

impl GroupWriter for Database {
    type Writer = Writer;
    type Batch = WriteBatch;
    type Output = Result<CommitInfo>;
    type State = State;

    fn poisoned<'w>(&self, w: &'w Writer) -> Option<&'w str> {
        w.poisoned.as_deref()
    }

    fn poison(&self, w: &mut Writer, why: String) {
        w.poisoned = Some(why);
    }

    fn refused(&self, why: &str) -> Result<CommitInfo> {
        Err(Error::WriterPoisoned(why.to_owned()))
    }

    fn lost(&self) -> Result<CommitInfo> {
        Err(Error::Internal("commit result missing".into()))
    }

    fn write_group(
        &self,
        w: &mut Writer,
        group: &[&WriteBatch],
    ) -> std::result::Result<Written<Result<CommitInfo>, State>, String> {
        let every = |e: &dyn Fn() -> Error| Written {
            outputs: group.iter().map(|_| Err(e())).collect(),
            state: None,
        };
        let Some(lock) = &self.shared.lock else {
            return Ok(every(&|| Error::ReadOnly));
        };
        // `flock` fails only on I/O trouble (interruptions are retried): the disk is in an
        // unknown state, as after a failed write.
        let _guard = lock
            .lock()
            .map_err(|e| format!("cannot take the writer lock: {e}"))?;
        let mut report = RecoveryReport::default();
        let caught_up = catch_up(
            &self.shared.options.io,
            &self.shared.dir,
            w,
            true,
            &mut report,
        );
        if let Err(e) = w.poison_on_io("catching up with the log", caught_up) {
            if let Some(why) = &w.poisoned {
                return Err(why.clone());
            }
            let msg = e.to_string();
            return Ok(every(&|| {
                Error::Internal(format!("cannot catch up with the log: {msg}"))
            }));
        }
        let db_id = self.shared.db_id;
        let now = now_ms();
        let mut state = State::clone(&w.state);
        let mut buf = Vec::new();
        let mut outputs = Vec::with_capacity(group.len());
        for batch in group {
            let mut trial = state.clone();
            let outcome = resolve(&mut trial, batch, now).and_then(|(ops, results)| {
                if ops.is_empty() {
                    return Ok(CommitInfo {
                        lsn: state.lsn,
                        results,
                    });
                }
                let lsn = state.lsn + 1;
                let payload = encode_commit(&CommitPayload { time_ms: now, ops });
                encode_record(&mut buf, db_id, lsn, &payload)?;
                trial.lsn = lsn;
                state = trial;
                Ok(CommitInfo { lsn, results })
            });
            outputs.push(outcome);
        }
        if buf.is_empty() {
            return Ok(Written {
                outputs,
                state: None,
            });
        }
        w.wal
            .write_at(&buf, w.wal_end)
            .and_then(|()| match self.shared.options.durability {
                Durability::Sync => w.wal.sync(),
                Durability::Buffered => Ok(()),
            })
            .map_err(|e| format!("WAL write failed: {e}"))?;
        w.wal_end += buf.len() as u64;
        Ok(Written {
            outputs,
            state: Some(state),
        })
    }

    fn publish_state(&self, w: &mut Writer, state: State) {
        w.state = Arc::new(state);
        self.publish(w);
    }

    fn after_group(&self, w: &mut Writer) {
        self.maybe_maintain(w);
    }
}
