//! Group commit.
//!
//! Every committer enqueues its batch and then takes the writer mutex. Whoever gets it
//! first is the leader: it drains the queue, takes the inter-process lock, catches up with
//! other processes' commits, resolves each batch in order into one WAL record, writes all
//! records with one positioned write, fsyncs once (in `Sync` mode), publishes the new state
//! and hands each follower its result. Followers find their result already set when they
//! get the mutex. A commit is acknowledged only after its record is written (and synced);
//! readers see it only then. A failed write or fsync poisons the handle: the state of the
//! log is unknown, so no further write is attempted until the database is reopened.

use std::sync::Arc;

use super::batch::{WriteBatch, resolve};
use super::handle::{Database, Writer};
use super::open::{RecoveryReport, catch_up};
use super::options::{CommitInfo, Durability};
use crate::error::{Error, Result};
use crate::format::record::{CommitPayload, encode_commit};
use crate::format::wal::encode_record;
use crate::sync::Mutex;

#[derive(Debug)]
pub(super) struct Pending {
    batch: WriteBatch,
    result: Mutex<Option<Result<CommitInfo>>>,
}

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
        let pending = Arc::new(Pending {
            batch,
            result: Mutex::new(None),
        });
        self.shared.queue.lock().push(pending.clone());
        let mut w = self.shared.writer.lock();
        if let Some(r) = pending.result.lock().take() {
            return r;
        }
        // Our batch is still queued (a leader sets the result of everything it drains
        // before releasing the writer mutex), so this group includes it.
        let group = std::mem::take(&mut *self.shared.queue.lock());
        let outcomes = self.commit_group(&mut w, &group);
        for (p, r) in group.iter().zip(outcomes) {
            *p.result.lock() = Some(r);
        }
        self.maybe_maintain(&mut w);
        drop(w);
        let r = pending.result.lock().take();
        r.unwrap_or_else(|| Err(Error::Internal("commit result missing".into())))
    }

    fn commit_group(&self, w: &mut Writer, group: &[Arc<Pending>]) -> Vec<Result<CommitInfo>> {
        let poisoned = |why: &str| {
            group
                .iter()
                .map(|_| Err(Error::WriterPoisoned(why.to_owned())))
                .collect()
        };
        if let Some(why) = &w.poisoned {
            return poisoned(why);
        }
        let Some(lock) = &self.shared.lock else {
            return group.iter().map(|_| Err(Error::ReadOnly)).collect();
        };
        let _guard = match lock.lock() {
            Ok(g) => g,
            Err(e) => {
                // `flock` fails only on I/O trouble (interruptions are retried): the disk
                // is in an unknown state, as after a failed write.
                let why = format!("cannot take the writer lock: {e}");
                w.poisoned = Some(why.clone());
                return poisoned(&why);
            }
        };
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
                return poisoned(why);
            }
            let msg = e.to_string();
            return group
                .iter()
                .map(|_| {
                    Err(Error::Internal(format!(
                        "cannot catch up with the log: {msg}"
                    )))
                })
                .collect();
        }
        let db_id = self.shared.db_id;
        let now = now_ms();
        let mut state = super::state::State::clone(&w.state);
        let mut buf = Vec::new();
        let mut outcomes = Vec::with_capacity(group.len());
        for p in group {
            let mut trial = state.clone();
            let outcome = resolve(&mut trial, &p.batch, now).and_then(|(ops, results)| {
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
            outcomes.push(outcome);
        }
        if !buf.is_empty() {
            let written = w.wal.write_at(&buf, w.wal_end).and_then(|()| {
                match self.shared.options.durability {
                    Durability::Sync => w.wal.sync(),
                    Durability::Buffered => Ok(()),
                }
            });
            if let Err(e) = written {
                let why = format!("WAL write failed: {e}");
                w.poisoned = Some(why.clone());
                return poisoned(&why);
            }
            w.wal_end += buf.len() as u64;
            w.state = Arc::new(state);
            self.publish(w);
        }
        outcomes
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
