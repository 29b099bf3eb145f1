//! A layout-1 segment (format 4, until compaction rewrites it) scored posting by posting:
//! its lists carry no block bounds to skip by, so every posting of every query term is
//! added into a dense accumulator by record index, and every document touched becomes a
//! candidate.

use super::Accumulator;
use super::context::ScoreContext;
use super::source::{SegmentIndex, TextSource};
use super::topk::Candidate;
use crate::error::Result;
use crate::format::codec::DecodeError;

/// Per-thread scratch of the layout-1 scorer: a dense accumulator indexed by record index,
/// with a generation stamp per slot so a query never clears it (O(postings touched), not
/// O(records)), and the list of slots touched.
#[derive(Default)]
pub struct RankScratch {
    acc: Vec<Accumulator>,
    stamp: Vec<u32>,
    generation: u32,
    touched: Vec<u32>,
}

impl std::fmt::Debug for RankScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankScratch")
            .field("records", &self.acc.len())
            .finish_non_exhaustive()
    }
}

impl RankScratch {
    /// Starts a pass over a segment of `records` records.
    fn begin(&mut self, records: usize) {
        if self.acc.len() < records {
            self.acc.resize(records, Accumulator::default());
            self.stamp.resize(records, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Wrapped: old stamps could collide with new generations.
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.generation = 1;
        }
        self.touched.clear();
    }

    /// The accumulator of record `i` (fresh on its first touch in this pass).
    #[inline]
    fn slot(&mut self, i: usize) -> Option<&mut Accumulator> {
        let stamp = self.stamp.get_mut(i)?;
        let acc = self.acc.get_mut(i)?;
        if *stamp != self.generation {
            *stamp = self.generation;
            *acc = Accumulator::default();
            // `i` < records ≤ u32 records per segment.
            self.touched.push(u32::try_from(i).ok()?);
        }
        Some(acc)
    }
}

/// Scores every posting of segment `segment`'s layout-1 index (`index`) into the dense
/// scratch accumulator by record index; every touched document becomes a candidate.
///
/// # Errors
/// `Corrupt` for damaged postings, or postings naming a node without a record.
pub(crate) fn score_segment<S: TextSource + ?Sized>(
    source: &S,
    segment: usize,
    index: &SegmentIndex<'_>,
    ctx: &ScoreContext<'_>,
    scratch: &mut RankScratch,
    cands: &mut Vec<Candidate>,
) -> Result<()> {
    let corrupt = |e: DecodeError| source.corrupt(segment, e);
    let v = &index.view;
    let records = usize::try_from(v.stats.docs).unwrap_or(usize::MAX);
    scratch.begin(records);
    for (t, &idf) in ctx.terms.iter().zip(ctx.idfs) {
        let Some(mut r) = v.postings(&t.term).map_err(corrupt)? else {
            continue;
        };
        // Postings come in node id order, as do the segment's records: each record is
        // found by galloping forward from the previous one.
        let mut hint = 0usize;
        while let Some(p) = r.next_posting().map_err(corrupt)? {
            let Some((acc, lens)) = source
                .record_of(segment, p.node, &mut hint)
                .and_then(|rec| Some((scratch.slot(rec)?, v.doc_len(rec))))
            else {
                return Err(corrupt(DecodeError::new(
                    r.pos(),
                    format!("postings name node {}, which has no record", p.node),
                )));
            };
            acc.add(t, idf, ctx.weights, &p.tf, &lens, &ctx.avg);
        }
    }
    cands.reserve(scratch.touched.len());
    for &rec in &scratch.touched {
        let rec = rec as usize;
        let (Some(&node), Some(acc)) = (index.node_ids.get(rec), scratch.acc.get(rec)) else {
            continue;
        };
        cands.push(Candidate {
            node,
            base: acc.base(ctx.words),
            acc: *acc,
            seg: Some(segment),
            len: super::topk::doc_length(&v.doc_len(rec)),
            phrase: ctx.phrase_possible(acc.words, || index.allows_phrase(ctx, rec)),
            phrase_known: None,
        });
    }
    Ok(())
}
