//! The group-commit protocol, apart from what writing a group does.
//!
//! Every committer enqueues its batch. If no leader is at work, it leads: it drains the
//! queue (its own batch and every batch enqueued before the drain, in enqueue order), takes
//! the writer mutex, has the writer resolve, write and sync them as one group
//! ([`GroupWriter::write_group`]), publishes the new state, and hands every batch of the
//! group its result. Otherwise it sleeps until a leader hands it its result, or until the
//! leader is done and no one leads: then the first committer to wake with its batch still
//! queued leads the next group, which holds every batch that queued while the previous
//! group was being written. Followers wait on the queue's condition variable, not on the
//! writer mutex, so a finished group's committers all wake at once and the next group
//! gathers everyone who queued meanwhile (waiting on the mutex handed it from follower to
//! follower, and the next group held only the batches that queued in that hand-off: 2–3
//! of 8 writers). A group whose write fails poisons the writer: that group's committers and
//! every later one get the writer's refusal, and nothing is written or published any more.
//!
//! `commit.rs` runs this with the database's WAL behind it; the loom model below runs the
//! same code with a fake writer and checks the hand-off, the order of LSNs, the order of
//! publication and poisoning under every interleaving.

use std::sync::Arc;

use crate::sync::{Condvar, Mutex};

/// One committer's batch in the queue, and the slot its leader hands its result off in.
#[derive(Debug)]
pub(super) struct Pending<B, R> {
    batch: B,
    result: Mutex<Option<R>>,
}

/// The batches waiting for a leader, in enqueue order, and whether a leader is at work.
#[derive(Debug)]
pub(super) struct Queue<B, R> {
    state: Mutex<Waiting<B, R>>,
    /// Notified when a leader has handed off its group's results and stepped down.
    done: Condvar,
}

#[derive(Debug)]
struct Waiting<B, R> {
    batches: Vec<Arc<Pending<B, R>>>,
    leading: bool,
}

impl<B, R> Queue<B, R> {
    pub(super) fn new() -> Self {
        Queue {
            state: Mutex::new(Waiting {
                batches: Vec::new(),
                leading: false,
            }),
            done: Condvar::new(),
        }
    }
}

/// What a group's write produced: one output per batch, in the group's order, and the new
/// state to publish (`None` when no batch changed anything).
pub(super) struct Written<R, S> {
    pub(super) outputs: Vec<R>,
    pub(super) state: Option<S>,
}

/// What the protocol needs from the writer it serializes on. `Writer` is what the writer
/// mutex guards; the methods are called only with that mutex held.
pub(super) trait GroupWriter {
    type Writer;
    type Batch;
    /// One committer's result: success or its own error.
    type Output;
    /// The state readers see.
    type State;

    /// Why this writer refuses to write, once poisoned.
    fn poisoned<'w>(&self, w: &'w Self::Writer) -> Option<&'w str>;
    /// Poisons the writer: no write is tried any more.
    fn poison(&self, w: &mut Self::Writer, why: String);
    /// The output of a committer whose group was refused (a poisoned writer) or failed.
    fn refused(&self, why: &str) -> Self::Output;
    /// The output of a committer whose result went missing (a leader's `write_group`
    /// returned too few outputs or panicked).
    fn lost(&self) -> Self::Output;
    /// Resolves the group's batches in order against the current state, writes them and
    /// (if the writer syncs) syncs. `Err(why)` when the files are in an unknown state
    /// afterwards: the protocol poisons the writer with `why` and publishes nothing.
    fn write_group(
        &self,
        w: &mut Self::Writer,
        group: &[&Self::Batch],
    ) -> Result<Written<Self::Output, Self::State>, String>;
    /// Makes `state` the writer's state and publishes it to readers.
    fn publish_state(&self, w: &mut Self::Writer, state: Self::State);
    /// Runs after the group's results are handed off, still under the writer mutex
    /// (automatic maintenance).
    fn after_group(&self, w: &mut Self::Writer);
}

/// Commits `batch` through `queue` and the writer behind `writer`: returns once the
/// batch's group was written and published (or refused).
pub(super) fn commit<G: GroupWriter>(
    g: &G,
    queue: &Queue<G::Batch, G::Output>,
    writer: &Mutex<G::Writer>,
    batch: G::Batch,
) -> G::Output {
    let me = Arc::new(Pending {
        batch,
        result: Mutex::new(None),
    });
    let mut q = queue.state.lock();
    q.batches.push(me.clone());
    loop {
        if let Some(r) = me.result.lock().take() {
            return r;
        }
        if !q.leading {
            break;
        }
        q = queue.done.wait(q);
    }
    // No leader, and our batch has no result: a leader sets the result of everything it
    // drains before it steps down, so our batch is still queued and leads this group.
    q.leading = true;
    let group = std::mem::take(&mut q.batches);
    drop(q);
    let mut stepping_down = StepDown {
        g,
        queue,
        group: &group,
        done: false,
    };
    let mut w = writer.lock();
    let mut outputs = lead(g, &mut w, &group).into_iter();
    for p in &group {
        *p.result.lock() = Some(outputs.next().unwrap_or_else(|| g.lost()));
    }
    stepping_down.now();
    g.after_group(&mut w);
    drop(w);
    let r = me.result.lock().take();
    r.unwrap_or_else(|| g.lost())
}

/// A leader's last act, also when it unwinds: every batch of its group without a result
/// gets `lost`, the queue has no leader, and the sleepers wake (to return, or to lead).
struct StepDown<'a, G: GroupWriter> {
    g: &'a G,
    queue: &'a Queue<G::Batch, G::Output>,
    group: &'a [Arc<Pending<G::Batch, G::Output>>],
    done: bool,
}

impl<G: GroupWriter> StepDown<'_, G> {
    fn now(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let mut q = self.queue.state.lock();
        debug_assert!(q.leading, "a leader stepped down twice");
        for p in self.group {
            let mut r = p.result.lock();
            if r.is_none() {
                *r = Some(self.g.lost());
            }
        }
        q.leading = false;
        drop(q);
        self.queue.done.notify_all();
    }
}

impl<G: GroupWriter> Drop for StepDown<'_, G> {
    fn drop(&mut self) {
        self.now();
    }
}

/// The leader's part: one output per batch of `group`, in order.
fn lead<G: GroupWriter>(
    g: &G,
    w: &mut G::Writer,
    group: &[Arc<Pending<G::Batch, G::Output>>],
) -> Vec<G::Output> {
    let refuse = |why: &str| group.iter().map(|_| g.refused(why)).collect();
    if let Some(why) = g.poisoned(w) {
        return refuse(why);
    }
    let batches: Vec<&G::Batch> = group.iter().map(|p| &p.batch).collect();
    match g.write_group(w, &batches) {
        Ok(Written { outputs, state }) => {
            if let Some(state) = state {
                g.publish_state(w, state);
            }
            outputs
        }
        Err(why) => {
            let outputs = refuse(&why);
            g.poison(w, why);
            outputs
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! The protocol with real threads and a writer whose first group panics: the panicking
    //! leader still steps down, its group gets `lost`, and later committers are served.

    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug, PartialEq)]
    enum Out {
        Written(u32),
        Lost,
    }

    struct Panicky {
        groups: AtomicUsize,
    }

    impl GroupWriter for Panicky {
        type Writer = Vec<u32>;
        type Batch = u32;
        type Output = Out;
        type State = ();

        fn poisoned<'w>(&self, _: &'w Vec<u32>) -> Option<&'w str> {
            None
        }
        fn poison(&self, _: &mut Vec<u32>, _: String) {}
        fn refused(&self, _: &str) -> Out {
            Out::Lost
        }
        fn lost(&self) -> Out {
            Out::Lost
        }
        fn write_group(
            &self,
            w: &mut Vec<u32>,
            group: &[&u32],
        ) -> Result<Written<Out, ()>, String> {
            if self.groups.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("the first group's write panics");
            }
            w.extend(group.iter().copied());
            Ok(Written {
                outputs: group.iter().map(|&&b| Out::Written(b)).collect(),
                state: None,
            })
        }
        fn publish_state(&self, _: &mut Vec<u32>, (): ()) {}
        fn after_group(&self, _: &mut Vec<u32>) {}
    }

    #[test]
    fn a_leader_that_panics_still_steps_down() {
        let shared = Arc::new((
            Panicky {
                groups: AtomicUsize::new(0),
            },
            Queue::new(),
            Mutex::new(Vec::new()),
        ));
        // Each committer reports on a channel; a committer left asleep fails the test by
        // the timeout instead of hanging it.
        let (tx, rx) = std::sync::mpsc::channel();
        for b in 0..8u32 {
            let (shared, tx) = (shared.clone(), tx.clone());
            std::thread::spawn(move || {
                let (g, queue, writer) = &*shared;
                let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    commit(g, queue, writer, b)
                }));
                let _ = tx.send(out.ok());
            });
        }
        let outs: Vec<Option<Out>> = (0..8)
            .map(|_| {
                rx.recv_timeout(std::time::Duration::from_secs(60))
                    .expect("a committer never returned: the leader did not step down")
            })
            .collect();
        // The panicking leader's own call unwinds; its followers get `lost`; everyone
        // else is written, each exactly once.
        assert_eq!(outs.iter().filter(|o| o.is_none()).count(), 1, "{outs:?}");
        let mut written: Vec<u32> = outs
            .iter()
            .filter_map(|o| match o {
                Some(Out::Written(b)) => Some(*b),
                _ => None,
            })
            .collect();
        written.sort_unstable();
        let (g, queue, writer) = &*shared;
        let mut log = writer.lock().clone();
        log.sort_unstable();
        assert_eq!(log, written, "written batches are those acknowledged");
        // A commit after the panic is served normally.
        assert_eq!(commit(g, queue, writer, 99), Out::Written(99));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! Committer threads (and one reader) run the real [`commit`] against a fake writer
    //! whose "log" is the list of batch ids written (LSN = position + 1) and whose state
    //! is the list of ids applied; the fake can reject a batch on its own (like a batch
    //! that fails validation) or fail a whole group's write.

    use super::*;
    use crate::sync::Published;
    use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

    #[derive(Clone, Copy, Debug)]
    struct Batch {
        id: u32,
        /// False: the batch fails on its own (gets its error, takes no LSN).
        valid: bool,
    }

    #[derive(Debug, PartialEq)]
    enum Fail {
        Invalid(u32),
        Poisoned(String),
        Lost,
    }

    /// `(batch id, lsn)`.
    type Output = Result<(u32, usize), Fail>;

    /// The writer-side state behind the writer mutex.
    #[derive(Debug, Default)]
    struct FakeWriter {
        /// The state (ids applied, in LSN order), as published last.
        state: Arc<Vec<u32>>,
        poisoned: Option<String>,
        /// Every `write_group` call: the group's ids and whether the write succeeded.
        groups: Vec<(Vec<u32>, bool)>,
    }

    #[derive(Debug)]
    struct Model {
        queue: Queue<Batch, Output>,
        writer: Mutex<FakeWriter>,
        published: Published<Vec<u32>>,
        /// Records written to the fake disk (the LSN of the last one).
        durable: AtomicUsize,
        /// The highest LSN acknowledged to a committer.
        acked: AtomicUsize,
        /// A committer was refused because the writer is poisoned.
        refusal_seen: AtomicBool,
        /// Which `write_group` call (1-based) fails, if any.
        fail_write: Option<usize>,
    }

    impl GroupWriter for Model {
        type Writer = FakeWriter;
        type Batch = Batch;
        type Output = Output;
        type State = Vec<u32>;

        fn poisoned<'w>(&self, w: &'w FakeWriter) -> Option<&'w str> {
            w.poisoned.as_deref()
        }
        fn poison(&self, w: &mut FakeWriter, why: String) {
            w.poisoned = Some(why);
        }
        fn refused(&self, why: &str) -> Output {
            Err(Fail::Poisoned(why.to_owned()))
        }
        fn lost(&self) -> Output {
            Err(Fail::Lost)
        }
        fn write_group(
            &self,
            w: &mut FakeWriter,
            group: &[&Batch],
        ) -> Result<Written<Output, Vec<u32>>, String> {
            assert!(w.poisoned.is_none(), "a poisoned writer was asked to write");
            assert!(!group.is_empty(), "empty group");
            let mut state = Vec::clone(&w.state);
            let outputs: Vec<Output> = group
                .iter()
                .map(|b| {
                    if !b.valid {
                        return Err(Fail::Invalid(b.id));
                    }
                    state.push(b.id);
                    Ok((b.id, state.len()))
                })
                .collect();
            let ids = group.iter().map(|b| b.id).collect();
            if self.fail_write == Some(w.groups.len() + 1) {
                w.groups.push((ids, false));
                return Err("disk full".to_owned());
            }
            w.groups.push((ids, true));
            let changed = state.len() > w.state.len();
            self.durable.store(state.len(), SeqCst);
            Ok(Written {
                outputs,
                state: changed.then_some(state),
            })
        }
        fn publish_state(&self, w: &mut FakeWriter, state: Vec<u32>) {
            w.state = Arc::new(state);
            drop(self.published.store(w.state.clone()));
        }
        fn after_group(&self, _: &mut FakeWriter) {}
    }

    /// One committer: checks what it gets against what was acknowledged before it began.
    fn committer(m: &Model, batch: Batch) -> Output {
        let acked_before = m.acked.load(SeqCst);
        let refused_before = m.refusal_seen.load(SeqCst);
        let out = commit(m, &m.queue, &m.writer, batch);
        match &out {
            Ok((id, lsn)) => {
                assert_eq!(*id, batch.id, "got another committer's result");
                assert!(batch.valid, "an invalid batch was acknowledged");
                assert!(!refused_before, "a commit succeeded after a refusal");
                assert!(
                    *lsn > acked_before,
                    "LSN {lsn} not after an earlier commit's"
                );
                m.acked.fetch_max(*lsn, SeqCst);
            }
            Err(Fail::Invalid(id)) => assert_eq!(*id, batch.id, "another batch's error"),
            Err(Fail::Poisoned(_)) => m.refusal_seen.store(true, SeqCst),
            Err(Fail::Lost) => panic!("result lost"),
        }
        out
    }

    /// A reader taking `n` snapshots: each is complete, contains every acknowledged commit,
    /// nothing not yet written, and none goes back in time.
    fn reader(m: &Model, n: usize) -> Vec<Arc<Vec<u32>>> {
        let mut seen: Vec<Arc<Vec<u32>>> = Vec::new();
        for _ in 0..n {
            let acked = m.acked.load(SeqCst);
            let s = m.published.load();
            let durable = m.durable.load(SeqCst);
            assert!(s.len() >= acked, "an acknowledged commit is not visible");
            assert!(s.len() <= durable, "published before it was written");
            if let Some(prev) = seen.last() {
                assert!(
                    s.starts_with(prev),
                    "went back in time: {prev:?} then {s:?}"
                );
            }
            seen.push(s);
        }
        seen
    }

    /// Runs `batches` on one committer thread each, plus a reader taking `reads`
    /// snapshots, and checks the outcome against the writer's record of its groups.
    fn run(batches: &'static [Batch], reads: usize, fail_write: Option<usize>) {
        let m = Arc::new(Model {
            queue: Queue::new(),
            writer: Mutex::new(FakeWriter::default()),
            published: Published::new(Arc::new(Vec::new())),
            durable: AtomicUsize::new(0),
            acked: AtomicUsize::new(0),
            refusal_seen: AtomicBool::new(false),
            fail_write,
        });
        let committers: Vec<_> = batches
            .iter()
            .map(|&b| {
                let m = m.clone();
                loom::thread::spawn(move || committer(&m, b))
            })
            .collect();
        let r = {
            let m = m.clone();
            loom::thread::spawn(move || reader(&m, reads))
        };
        let outputs: Vec<Output> = committers.into_iter().map(|t| t.join().unwrap()).collect();
        let seen = r.join().unwrap();

        let w = m.writer.lock();
        let log = &*w.state;
        // The log is the successful groups' valid batches, in group order.
        let expected: Vec<u32> = w
            .groups
            .iter()
            .filter(|(_, ok)| *ok)
            .flat_map(|(ids, _)| ids.iter().copied())
            .filter(|id| batches.iter().any(|b| b.id == *id && b.valid))
            .collect();
        assert_eq!(log, &expected, "log vs groups");
        assert_eq!(**m.published.load(), *log, "last publication");
        assert_eq!(m.durable.load(SeqCst), log.len());
        // No write after a failed one.
        if let Some(i) = w.groups.iter().position(|(_, ok)| !ok) {
            assert_eq!(i + 1, w.groups.len(), "a write after a failed one");
            assert!(w.poisoned.is_some());
        }
        // Every batch is in at most one group.
        for b in batches {
            let n = w
                .groups
                .iter()
                .filter(|(ids, _)| ids.contains(&b.id))
                .count();
            assert!(n <= 1, "batch {} written {n} times", b.id);
        }
        for (b, out) in batches.iter().zip(&outputs) {
            let group = w.groups.iter().find(|(ids, _)| ids.contains(&b.id));
            match (group, out) {
                (Some((_, true)), Ok((_, lsn))) => assert_eq!(log[lsn - 1], b.id),
                (Some((_, true)), Err(Fail::Invalid(_))) => assert!(!b.valid),
                (Some((_, false)) | None, Err(Fail::Poisoned(_))) => assert!(fail_write.is_some()),
                _ => panic!("batch {} got {out:?} in group {group:?}", b.id),
            }
        }
        for s in &seen {
            assert!(
                log.starts_with(s),
                "published {s:?}, not a prefix of {log:?}"
            );
        }
    }

    const VALID: [Batch; 3] = [
        Batch { id: 1, valid: true },
        Batch { id: 2, valid: true },
        Batch { id: 3, valid: true },
    ];
    const ONE_INVALID: [Batch; 3] = [
        Batch { id: 1, valid: true },
        Batch {
            id: 2,
            valid: false,
        },
        Batch { id: 3, valid: true },
    ];

    /// Explores the model's interleavings with at most `bound` preemptions (every
    /// interleaving with `None`). The bounds keep the whole run to seconds in a debug build.
    fn check(bound: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = bound;
        b.check(f);
    }

    /// Two committers and a reader taking two snapshots.
    #[test]
    fn two_committers() {
        check(Some(3), || run(&VALID[..2], 2, None));
    }

    /// Three committers (one batch invalid on its own) and a reader.
    #[test]
    fn three_committers() {
        check(Some(2), || run(&ONE_INVALID, 1, None));
    }

    /// The first group's write fails: everything is refused, nothing published. Every
    /// interleaving.
    #[test]
    fn first_write_fails() {
        check(None, || run(&VALID[..2], 1, Some(1)));
    }

    /// The second group's write fails: the first group stands; its successors are refused.
    #[test]
    fn second_write_fails() {
        check(Some(2), || run(&VALID, 1, Some(2)));
    }
}
