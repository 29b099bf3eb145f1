//! Read-decide-write tools as optimistic transactions: a tool plans its batch on a
//! snapshot, making it conditional on the nodes it read (`WriteBatch::expect_node`: the
//! batch commits only if they are unchanged); after a conflict it plans again on a newer
//! snapshot. A tool that rewrites what it read (an entity's observations, a superseded
//! memory) therefore never overwrites a concurrent writer's change with a stale copy,
//! while commits that touch other nodes do not disturb it.

use hopgraph::{CommitInfo, Database, Error, Snapshot, WriteBatch};

use crate::{ToolError, ToolErrorKind};

/// Most times a tool plans and commits before it gives up because other writers keep
/// changing the nodes it read between its snapshot and its commit.
pub const PLAN_ATTEMPTS_MAX: u32 = 32;

/// Plans with `plan` on a snapshot and commits the batch it returns (which `plan` makes
/// conditional on what it read), planning again on a newer snapshot after a conflict, at
/// most [`PLAN_ATTEMPTS_MAX`] times, with a short randomized pause from the second
/// conflict on so that writers colliding on one node do not collide again in lockstep.
/// An empty batch is not committed (`None`). A failed commit's error goes through
/// `commit_error`. Without a database (`db` `None`: a context that has none yet) the plan
/// runs once on an empty store, where a tool that only changes what exists finds nothing
/// to write.
///
/// # Errors
/// The plan's error, `commit_error`'s, or a storage error when every attempt conflicted.
pub(crate) fn commit_planned<T>(
    db: Option<&Database>,
    mut plan: impl FnMut(&Snapshot) -> Result<(WriteBatch, T), ToolError>,
    commit_error: impl Fn(Error) -> ToolError,
) -> Result<(Option<CommitInfo>, T), ToolError> {
    let Some(db) = db else {
        let (batch, planned) = plan(&Snapshot::empty())?;
        if !batch.is_empty() {
            return Err(ToolError::new(
                ToolErrorKind::Internal,
                "Internal error: a write was planned for a context that has no database",
            ));
        }
        return Ok((None, planned));
    };
    let mut attempts = 0;
    loop {
        let snap = db.snapshot();
        let (batch, planned) = plan(&snap)?;
        if batch.is_empty() {
            return Ok((None, planned));
        }
        attempts += 1;
        match db.commit(batch) {
            Ok(info) => return Ok((Some(info), planned)),
            Err(Error::Conflict { .. }) if attempts < PLAN_ATTEMPTS_MAX => {
                if attempts > 1 {
                    pause(attempts);
                }
            }
            Err(Error::Conflict { what }) => {
                return Err(ToolError::new(
                    ToolErrorKind::Storage,
                    format!(
                        "Storage error: {what} kept changing under concurrent writers \
                         ({attempts} attempts); nothing was written, try again"
                    ),
                ));
            }
            Err(e) => return Err(commit_error(e)),
        }
    }
}

/// Sleeps up to 50 µs × 2^min(attempt, 6) (at most 3.2 ms), the length drawn from the
/// clock's nanoseconds: enough to break the lockstep of writers that keep conflicting.
fn pause(attempt: u32) {
    let ceiling = 50u64 << attempt.min(6);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    std::thread::sleep(std::time::Duration::from_micros(1 + nanos % ceiling));
}
