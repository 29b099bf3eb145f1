//! Ranked text search over a [`TextSource`]: the query plan (each segment's postings list
//! per query term, collection statistics, idfs), then the delta scored in full, each
//! blocked (layout 2 or 3) segment by the pruned walk ([`maxscore`](super::maxscore)) and each layout-1
//! segment posting by posting ([`exhaustive`](super::exhaustive)), all feeding one
//! threshold and one candidate list, and finally the phrase check and the top hits
//! ([`topk`](super::topk)).

use std::cell::RefCell;

use super::context::ScoreContext;
use super::exhaustive::{self, RankScratch};
use super::maxscore::{self, SegmentLists, WalkError};
use super::source::{SegmentIndex, TextSource};
use super::threshold::Threshold;
use super::topk::{self, Candidate, doc_length};
use super::{Accumulator, ParsedQuery, TextHit, TextQuery, check_query, idf, thread_analyzer};
use crate::error::Result;
use crate::format::text::{PostingList, TEXT_FIELDS, TEXT_LAYOUT_BLOCKED};

thread_local! {
    static SCRATCH: RefCell<RankScratch> = RefCell::new(RankScratch::default());
}

/// The `offset + limit` best hits of `q` over `source`, best first (ties: the shorter
/// document, then the lower node id); see DESIGN.md §13. Uses this thread's scratch.
///
/// # Errors
/// `InvalidArgument` for a query outside the limits; `Corrupt` for a damaged index or
/// record.
pub fn search<S: TextSource + ?Sized>(source: &S, q: &TextQuery) -> Result<Vec<TextHit>> {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => search_with(source, q, &mut scratch),
        // Re-entered on this thread (not done today): a scratch of its own.
        Err(_) => search_with(source, q, &mut RankScratch::default()),
    })
}

/// [`search`] with the given scratch.
///
/// # Errors
/// As [`search`].
pub fn search_with<S: TextSource + ?Sized>(
    source: &S,
    q: &TextQuery,
    scratch: &mut RankScratch,
) -> Result<Vec<TextHit>> {
    check_query(q)?;
    let analyzer = thread_analyzer();
    let parsed = ParsedQuery::parse(&analyzer, &q.query)?;
    if parsed.terms.is_empty() {
        return Ok(Vec::new());
    }
    let mut segments = Vec::new();
    for s in 0..source.segments() {
        if let Some(index) = source.segment_index(s)? {
            segments.push((s, index));
        }
    }
    let plan = Plan::new(source, &segments, &parsed)?;
    let ctx = ScoreContext::new(&parsed, &plan.idfs, &q.weights, plan.avg);
    // The `need` best base scores of valid candidates seen so far: a lower bound of the
    // `need`-th best final score, below which a document's bound prunes it.
    let mut top = Threshold::new(q.offset.saturating_add(q.limit));
    let mut cands: Vec<Candidate> = Vec::new();
    score_delta(source, q, &ctx, &mut top, &mut cands)?;
    // Segments: layouts 2 and 3 by pruned document-at-a-time evaluation; layout 1 (format 4
    // segments until compaction rewrites them) by scoring every posting.
    let phrase_pairs = parsed.phrase_pair_hashes();
    let mut memo = topk::PhraseMemo::new(&analyzer, &parsed);
    let without_phrase = ctx.without_phrase();
    for ((s, index), lists) in segments.iter().zip(&plan.lists) {
        if index.view.layout() >= TEXT_LAYOUT_BLOCKED {
            let seg = SegmentLists {
                segment: *s,
                index,
                lists,
            };
            // A segment whose phrase-pair set lacks a pair of the phrase holds it nowhere.
            let ctx = if index.rules_out_phrase(&phrase_pairs) {
                &without_phrase
            } else {
                &ctx
            };
            maxscore::score_segment(source, seg, ctx, &mut top, &mut cands, q, &mut memo).map_err(
                |e| match e {
                    WalkError::Decode(e) => source.corrupt(*s, e),
                    WalkError::Engine(e) => e,
                },
            )?;
        } else {
            exhaustive::score_segment(source, *s, index, &ctx, scratch, &mut cands)?;
        }
    }
    let ranked = topk::rank_candidates(source, q, &parsed, &mut memo, &cands, top.value())?;
    topk::hits(source, q, &parsed, &analyzer, ranked)
}

/// What a query reads before scoring: each blocked segment's postings list per query
/// term (looked up once, for its df here and its postings in the walk), the idf of each
/// query term, and the average field lengths. Collection statistics count every version
/// (superseded ones included, until compaction drops them).
struct Plan<'a> {
    /// Per segment of the search, per query term (layouts 2 and 3; empty for layout 1).
    lists: Vec<Vec<Option<PostingList<'a>>>>,
    idfs: Vec<f64>,
    avg: [f64; TEXT_FIELDS],
}

impl<'a> Plan<'a> {
    fn new<S: TextSource + ?Sized>(
        source: &S,
        segments: &[(usize, SegmentIndex<'a>)],
        parsed: &ParsedQuery,
    ) -> Result<Plan<'a>> {
        let (mut docs, mut totals) = source.delta_stats();
        for (_, index) in segments {
            docs += index.view.stats.docs;
            for (t, s) in totals.iter_mut().zip(index.view.stats.field_len_total) {
                *t += s;
            }
        }
        let avg = totals.map(|t| {
            if docs == 0 {
                0.0
            } else {
                t as f64 / docs as f64
            }
        });
        let mut lists: Vec<Vec<Option<PostingList<'a>>>> = vec![Vec::new(); segments.len()];
        let mut idfs = Vec::with_capacity(parsed.terms.len());
        for t in &parsed.terms {
            let mut df = source.delta_df(&t.term);
            for ((s, index), lists) in segments.iter().zip(&mut lists) {
                let v = &index.view;
                if v.layout() >= TEXT_LAYOUT_BLOCKED {
                    let list = v.list(&t.term).map_err(|e| source.corrupt(*s, e))?;
                    df += list.map_or(0, |l| u64::from(l.df()));
                    lists.push(list);
                } else {
                    df += v.df(&t.term).map_err(|e| source.corrupt(*s, e))?;
                }
            }
            idfs.push(idf(docs, df));
        }
        Ok(Plan { lists, idfs, avg })
    }
}

/// Scores the delta (small, live nodes only) posting by posting; every document touched
/// is offered to `top` and becomes a candidate. The query terms' lists come in node
/// order and are merged by node, so a document's scores are summed in term order (as the
/// segments' walk sums them) with no map from node to accumulator.
fn score_delta<S: TextSource + ?Sized>(
    source: &S,
    q: &TextQuery,
    ctx: &ScoreContext<'_>,
    top: &mut Threshold,
    cands: &mut Vec<Candidate>,
) -> Result<()> {
    /// One posting: node, frequency per field, the document's field lengths.
    type Posting = (u32, [u32; TEXT_FIELDS], [u32; TEXT_FIELDS]);
    // Every query term's postings, one list after another; `ends[i]` ends term i's.
    let mut postings: Vec<Posting> = Vec::new();
    let mut ends: Vec<usize> = Vec::with_capacity(ctx.terms.len());
    for t in ctx.terms {
        let from = postings.len();
        source.for_each_delta_posting(&t.term, |node, tf, lens| {
            debug_assert!(
                postings.len() == from || postings.last().is_some_and(|p| p.0 < node),
                "delta postings must come in increasing node order"
            );
            postings.push((node, *tf, *lens));
        });
        ends.push(postings.len());
    }
    if postings.is_empty() {
        return Ok(());
    }
    // Each term's next posting (term i's list starts where term i - 1's ends).
    let mut heads: Vec<usize> = std::iter::once(0)
        .chain(ends.iter().copied())
        .take(ends.len())
        .collect();
    loop {
        let next = heads
            .iter()
            .zip(&ends)
            .filter_map(|(&h, &end)| postings.get(h..end)?.first().map(|p| p.0))
            .min();
        let Some(node) = next else {
            break;
        };
        let mut acc = Accumulator::default();
        let mut lens = [0; TEXT_FIELDS];
        for (((t, &idf), head), &end) in ctx.terms.iter().zip(ctx.idfs).zip(&mut heads).zip(&ends) {
            if let Some(p) = postings.get(*head..end).and_then(<[Posting]>::first)
                && p.0 == node
            {
                lens = p.2;
                acc.add(t, idf, ctx.weights, &p.1, &lens, &ctx.avg);
                *head += 1;
            }
        }
        let base = acc.base(ctx.words);
        top.offer(base, || passes_filter(source, q, node))?;
        cands.push(Candidate {
            node,
            base,
            acc,
            seg: None,
            len: doc_length(&lens),
            phrase: ctx.phrase_possible(acc.words, || {
                ctx.phrase_allowed(source.delta_pair_filter(node).as_ref())
            }),
            phrase_known: None,
        });
    }
    Ok(())
}

/// Whether `node` (a live node's newest version) passes the query's filter.
///
/// # Errors
/// A damaged record.
pub(crate) fn passes_filter<S: TextSource + ?Sized>(
    source: &S,
    q: &TextQuery,
    node: u32,
) -> Result<bool> {
    if q.filter.is_empty() {
        return Ok(true);
    }
    Ok(source.node(node)?.is_some_and(|n| q.filter.matches(&n)))
}
