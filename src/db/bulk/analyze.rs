//! Text analysis of a bulk load's nodes on worker threads.
//!
//! Analysing a node's text (segmentation, case folding, stemming, counting terms) is most
//! of a text-heavy load's time and needs nothing but the node, so it runs on worker
//! threads while the loading thread builds the next nodes and feeds finished ones to the
//! segment: their records (encoded there) and embeddings to its content, and their terms,
//! batch by batch, to an indexing thread that adds them to the text index writer. Nodes go
//! out in numbered batches and are added back in batch order, so the segment is byte for
//! byte what a serial load writes.
//!
//! Records are encoded on the loading thread, not the workers, on purpose: a record lives
//! until the segment is written, and records allocated on the workers filled their
//! allocator arenas, into which the loading thread frees the analysed terms; on a 1M-node
//! load the allocator's time then doubled (glibc) and the load got slower, not faster.

use std::collections::BTreeMap;
use std::sync::mpsc;

use parking_lot::Mutex;

use super::super::build::{SegmentContent, encode_record};
use crate::error::{Error, Result};
use crate::format::text::{TEXT_FIELDS, TextIndexWriter};
use crate::model::Node;
use crate::text::{Analyzer, TermCounts};

/// A node's analysed text packed into three allocations (terms' bytes, their counts,
/// its pair hashes), so that what a worker thread allocates and the loading thread frees
/// is a few blocks per node, not one per term (freeing across threads is slow in common
/// allocators).
struct PackedTerms {
    lens: [u32; TEXT_FIELDS],
    /// Its pair hashes (`DocTerms::pairs`).
    pairs: Vec<u32>,
    /// The terms' bytes back to back, in the order they first occur in the node's text.
    bytes: Vec<u8>,
    /// Per term: its end in `bytes` and its frequency per field.
    terms: Vec<(u32, [u32; TEXT_FIELDS])>,
}

impl PackedTerms {
    /// `node`'s terms, counted in `counts` (one per thread, reused node after node).
    fn pack(analyzer: &Analyzer, counts: &mut TermCounts, node: &Node) -> PackedTerms {
        counts.count(analyzer, node);
        PackedTerms {
            lens: counts.lens,
            pairs: counts.pairs.clone(),
            bytes: counts.bytes().to_vec(),
            terms: counts.ends().collect(),
        }
    }

    /// Adds `node`'s terms to the text index writer `text`.
    fn add_terms_to(&self, node: u32, text: &mut TextIndexWriter) {
        let mut start = 0usize;
        let terms = self.terms.iter().map(|&(end, tf)| {
            let t = self.bytes.get(start..end as usize).unwrap_or(&[]);
            start = end as usize;
            (t, tf)
        });
        text.add_doc_borrowed(node, self.lens, &self.pairs, terms);
    }
}

/// Adds `node`'s record to `content` and moves its embedding there.
fn add_record_to(mut node: Node, content: &mut SegmentContent<'_>) {
    let record = encode_record(&node);
    content.note_validity(&node);
    let embedding = node.props.embedding.take();
    content.push_encoded(node.id.0, record, embedding);
}

/// A node as a worker hands it back: with its analysed text.
type Analyzed = (Node, PackedTerms);

/// Nodes per batch handed to a worker: large enough that a batch's hand-over is noise,
/// small enough that the workers start at once and a batch's nodes stay few.
const BATCH: usize = 512;

/// Batches of analysed terms that may wait for the indexing thread.
const INDEX_QUEUE: usize = 4;

/// At most this many worker threads (a load is also bounded by the loading thread).
const THREADS_MAX: usize = 8;

/// Receives nodes in order (`push`) and adds each, with its analysed text, to `content`
/// in the same order.
pub(super) trait NodeSink {
    /// Adds `node` (after the ones pushed before it).
    fn push(&mut self, node: Node) -> Result<()>;
}

struct Serial<'c, 'p> {
    content: &'c mut SegmentContent<'p>,
}

impl NodeSink for Serial<'_, '_> {
    fn push(&mut self, node: Node) -> Result<()> {
        self.content.push_node(&node);
        Ok(())
    }
}

struct Parallel<'c, 'p> {
    content: &'c mut SegmentContent<'p>,
    /// The indexing thread's queue, which adds each batch's terms to the text index in
    /// batch order (`None`: added here, to `content.text`).
    index: Option<mpsc::SyncSender<Vec<(u32, PackedTerms)>>>,
    jobs: Option<mpsc::SyncSender<(u64, Vec<Node>)>>,
    results: mpsc::Receiver<(u64, Vec<Analyzed>)>,
    batch: Vec<Node>,
    sent: u64,
    /// The next batch to add to `content`.
    next: u64,
    /// Batches that came back ahead of `next`.
    early: BTreeMap<u64, Vec<Analyzed>>,
}

fn workers_gone() -> Error {
    Error::invalid("a bulk load's text analysis thread stopped")
}

impl Parallel<'_, '_> {
    fn send_batch(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        let jobs = self.jobs.as_ref().ok_or_else(workers_gone)?;
        jobs.send((self.sent, batch)).map_err(|_| workers_gone())?;
        self.sent += 1;
        Ok(())
    }

    /// Adds every batch that has come back in order; with `wait`, until all sent have.
    fn drain(&mut self, wait: bool) -> Result<()> {
        while self.next < self.sent {
            if let Some(done) = self.early.remove(&self.next) {
                match &self.index {
                    Some(index) => {
                        let mut terms = Vec::with_capacity(done.len());
                        for (node, doc) in done {
                            terms.push((node.id.0, doc));
                            add_record_to(node, self.content);
                        }
                        index.send(terms).map_err(|_| workers_gone())?;
                    }
                    None => {
                        for (node, doc) in done {
                            doc.add_terms_to(node.id.0, &mut self.content.text);
                            add_record_to(node, self.content);
                        }
                    }
                }
                self.next += 1;
                continue;
            }
            let got = if wait {
                self.results.recv().map_err(|_| workers_gone())?
            } else {
                match self.results.try_recv() {
                    Ok(got) => got,
                    Err(mpsc::TryRecvError::Empty) => return Ok(()),
                    Err(mpsc::TryRecvError::Disconnected) => return Err(workers_gone()),
                }
            };
            self.early.insert(got.0, got.1);
        }
        Ok(())
    }
}

impl NodeSink for Parallel<'_, '_> {
    fn push(&mut self, node: Node) -> Result<()> {
        self.batch.push(node);
        if self.batch.len() >= BATCH {
            self.send_batch()?;
            self.drain(false)?;
        }
        Ok(())
    }
}

/// Runs `produce` with a sink that adds the nodes it pushes to `content`, analysing their
/// texts on worker threads when the machine has more than one core.
///
/// # Errors
/// What `produce` returns; an error if a worker thread stopped (it cannot, short of a
/// bug: analysis does not fail).
pub(super) fn push_nodes(
    content: &mut SegmentContent<'_>,
    produce: impl FnOnce(&mut dyn NodeSink) -> Result<()>,
) -> Result<()> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(THREADS_MAX);
    if threads < 2 {
        return produce(&mut Serial { content });
    }
    let (jobs, job_rx) = mpsc::sync_channel::<(u64, Vec<Node>)>(threads * 2);
    let job_rx = Mutex::new(job_rx);
    let (result_tx, results) = mpsc::channel();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (job_rx, result_tx) = (&job_rx, result_tx.clone());
            s.spawn(move || {
                // One analyzer per thread for the whole load: its stem memo carries over.
                let analyzer = Analyzer::new();
                let mut counts = TermCounts::default();
                loop {
                    let job = job_rx.lock().recv();
                    let Ok((seq, nodes)) = job else { break };
                    let done: Vec<Analyzed> = nodes
                        .into_iter()
                        .map(|n| {
                            let d = PackedTerms::pack(&analyzer, &mut counts, &n);
                            (n, d)
                        })
                        .collect();
                    if result_tx.send((seq, done)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(result_tx);
        // The text index is built on a thread of its own while this one encodes the
        // records: its hash-map inserts were most of this thread's time, which bounded
        // the load. Here when no thread can be started.
        let (index_tx, index_rx) = mpsc::sync_channel::<Vec<(u32, PackedTerms)>>(INDEX_QUEUE);
        // The writer travels over a channel, so that it stays here when no thread starts.
        let (writer_tx, writer_rx) = mpsc::sync_channel::<TextIndexWriter>(1);
        let indexer = std::thread::Builder::new()
            .name("hopgraph-index".into())
            .spawn_scoped(s, move || {
                let mut text = writer_rx.recv().ok()?;
                for batch in index_rx {
                    for (node, doc) in batch {
                        doc.add_terms_to(node, &mut text);
                    }
                }
                Some(text)
            });
        let (index, indexer) = match indexer {
            Ok(h) => match writer_tx.send(std::mem::take(&mut content.text)) {
                Ok(()) => (Some(index_tx), Some(h)),
                Err(e) => {
                    content.text = e.0;
                    (None, None)
                }
            },
            Err(_) => (None, None),
        };
        let mut sink = Parallel {
            content,
            index,
            jobs: Some(jobs),
            results,
            batch: Vec::with_capacity(BATCH),
            sent: 0,
            next: 0,
            early: BTreeMap::new(),
        };
        let r = produce(&mut sink)
            .and_then(|()| sink.send_batch())
            .and_then(|()| sink.drain(true));
        // Closing the job queue ends the workers (the scope waits for them), closing the
        // index queue the indexer, which hands the text index back.
        sink.jobs = None;
        sink.index = None;
        if let Some(h) = indexer {
            match h.join() {
                Ok(Some(text)) => sink.content.text = text,
                // It received the writer (sent above) before anything else.
                Ok(None) => return Err(workers_gone()),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        r
    })
}
