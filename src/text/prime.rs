//! Priming the threshold before a segment's pruned walk: a few documents likely to rank
//! high are scored first, so the walk starts with a higher θ and fewer essential terms.

use super::context::ScoreContext;
use super::cursor::{TermCursor, mask_terms};
use super::maxscore::{SegmentLists, WalkError};
use super::rank::passes_filter;
use super::source::TextSource;
use super::threshold::Threshold;
use super::{Accumulator, TextQuery, term_bound, term_tf_bound, tf_scale};
use crate::format::codec::DecodeError;
use crate::format::text::TEXT_FIELDS;

/// Most hits (offset + limit) for which a segment's walk primes its threshold first.
const PRIME_NEED_MAX: usize = 128;
/// How many of the highest-bound terms prime it.
pub(crate) const PRIME_TERMS: usize = 3;
/// How many primed documents (at least `need`) are scored by all of those terms: fewer
/// cost less to rescore, and 16 raised θ as well as 64 did on the comparison corpus
/// (DESIGN §13, step 5).
const PRIME_RESCORE_MAX: usize = 16;

/// Raises the threshold before the walk, so the walk starts with fewer essential terms
/// (half its documents were visited before θ reached its final level, measured on the
/// comparison corpus): for each term of `best` (the terms with the highest bounds), the
/// block with the highest block bound is decoded and each of its documents bounded by
/// that term at its tf with the block's least lengths (no random read of its lengths);
/// the [`PRIME_RESCORE_MAX`] documents with the highest sums of these bounds are scored
/// exactly by all of these terms — a sum of some of a document's term scores, at most
/// its base score (taken a hair low for rounding) — and the `need` best valid ones are
/// offered. Returns their record indices, sorted: the walk does not offer them again
/// (the threshold would count a document twice). Cost: one block (≤ 128 postings) per
/// term, then the lengths of at most [`PRIME_RESCORE_MAX`] documents and each term's
/// list sought forward to them; skipped when more than [`PRIME_NEED_MAX`] hits are
/// asked.
pub(crate) fn prime_threshold<S: TextSource + ?Sized>(
    source: &S,
    seg: SegmentLists<'_, '_>,
    ctx: &ScoreContext<'_>,
    best: &[TermCursor<'_>],
    top: &mut Threshold,
    q: &TextQuery,
) -> Result<Vec<u32>, WalkError> {
    let mut primed = Vec::new();
    if top.need > PRIME_NEED_MAX {
        return Ok(primed);
    }
    let scored = rescore_candidates(seg, ctx, best, top.need)?;
    for (score, rec) in scored {
        if primed.len() >= top.need {
            break;
        }
        let Some(&node) = seg.index.node_ids.get(rec as usize) else {
            continue;
        };
        if source.is_current(seg.segment, node) && passes_filter(source, q, node)? {
            top.offer(score, || Ok(true))?;
            primed.push(rec);
        }
    }
    primed.sort_unstable();
    Ok(primed)
}

/// The documents [`prime_threshold`] offers, best first: (a lower bound of the base
/// score, record index) for the [`PRIME_RESCORE_MAX`] (at least `need`) documents of the
/// `best` terms' best blocks with the highest bounds, each scored exactly by those terms.
fn rescore_candidates(
    seg: SegmentLists<'_, '_>,
    ctx: &ScoreContext<'_>,
    best: &[TermCursor<'_>],
    need: usize,
) -> Result<Vec<(f64, u32)>, DecodeError> {
    // (record, bound by one term) for every posting of each term's best block.
    let mut postings: Vec<(u32, f64)> = Vec::new();
    for t in best {
        best_block_bounds(t, ctx, &mut postings)?;
    }
    postings.sort_unstable_by_key(|p| p.0);
    // (bound, record) per document: its bounds summed.
    let mut scored: Vec<(f64, u32)> = postings
        .chunk_by(|a, b| a.0 == b.0)
        .map(|p| (p.iter().map(|x| x.1).sum(), p[0].0))
        .collect();
    // The best of them (highest bound, then lowest record: a total order, so the set
    // is the same however the selection runs) are scored by all of these terms, each
    // list sought to them in record order: a document in one term's best block often
    // holds the others too.
    let keep = PRIME_RESCORE_MAX.max(need);
    if scored.len() > keep {
        scored.select_nth_unstable_by(keep - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.truncate(keep);
    }
    scored.sort_unstable_by_key(|x| x.1);
    let view = &seg.index.view;
    for &(_, rec) in &scored {
        view.prefetch_doc_len(rec as usize);
    }
    let lens: Vec<[u32; TEXT_FIELDS]> = scored
        .iter()
        .map(|&(_, rec)| view.doc_len(rec as usize))
        .collect();
    let mut accs = vec![Accumulator::default(); scored.len()];
    for t in best {
        let mut cursor = t.cursor.list().cursor();
        for (j, &(_, rec)) in scored.iter().enumerate() {
            if !cursor.seek(rec)? {
                break;
            }
            if cursor.rec == rec {
                for term in mask_terms(t.terms) {
                    accs[j].add(
                        &ctx.terms[term],
                        ctx.idfs[term],
                        ctx.weights,
                        &cursor.tf,
                        &lens[j],
                        &ctx.avg,
                    );
                }
            }
        }
    }
    // Exact scores of some of each document's terms: at most its base score.
    let mut scored: Vec<(f64, u32)> = scored
        .iter()
        .zip(&accs)
        .map(|(&(_, rec), acc)| (acc.base(ctx.words) * (1.0 - 1e-9), rec))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(scored)
}

/// Appends `(record, bound)` for every posting of `t`'s block with the highest block bound
/// (all of a list without metas, which is one block): the most `t` adds to that document,
/// at its tf with the block's least lengths (its own are not read).
fn best_block_bounds(
    t: &TermCursor<'_>,
    ctx: &ScoreContext<'_>,
    out: &mut Vec<(u32, f64)>,
) -> Result<(), DecodeError> {
    let list = *t.cursor.list();
    let mut block = None;
    let mut block_bound = f64::NEG_INFINITY;
    for b in 0..list.blocks() {
        if let Some(meta) = list.meta(b) {
            let bound = term_bound(t.weight_idf, ctx.weights, &meta, &ctx.avg);
            if bound > block_bound {
                block_bound = bound;
                block = Some((b, meta));
            }
        }
    }
    let (first, last, len_min) = match block {
        Some((0, meta)) => (0, meta.last, meta.len_min),
        Some((b, meta)) => match list.meta(b - 1) {
            Some(prev) => (prev.last.saturating_add(1), meta.last, meta.len_min),
            None => return Ok(()),
        },
        // A list of one block has no metas: lengths at their least (0).
        None if list.blocks() == 0 => (0, u32::MAX, [0; TEXT_FIELDS]),
        None => return Ok(()),
    };
    let scale = tf_scale(ctx.weights, &len_min.map(u32::from), &ctx.avg);
    let mut cursor = list.cursor();
    let mut more = cursor.seek(first)?;
    while more && cursor.rec <= last {
        out.push((cursor.rec, term_tf_bound(t.weight_idf, &cursor.tf, &scale)));
        more = cursor.advance()?;
    }
    Ok(())
}
