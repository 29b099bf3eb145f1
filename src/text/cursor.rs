//! A query term's cursor over one segment's blocked postings (layout 2 or 3), with the bounds the
//! pruned walk asks of it: the list's, a block's (from its meta, cached per block) and a
//! posting's at its tf. One cursor serves every query term whose list in the segment is
//! the same (`PostingList::same_as`: a word whose only form there is the one the query
//! wrote has equal exact and stem lists): the list is walked once, and its bounds are
//! those of the terms together.

use super::context::ScoreContext;
use super::{term_bound, term_tf_bound, tf_scale};
use crate::format::codec::DecodeError;
use crate::format::text::{BlockMeta, PostingCursor, PostingList, TEXT_FIELDS};

/// A cursor over one segment's postings list for the query terms whose list it is, with
/// their bound.
pub(crate) struct TermCursor<'a> {
    /// The query terms it serves, as a mask of their indices (a query has at most
    /// `QUERY_TERMS_MAX` = 64 terms).
    pub terms: u64,
    /// The query words of those terms (`ScoreContext::word_bit`).
    pub words: u64,
    pub cursor: PostingCursor<'a>,
    /// Most the terms together add to any document of the segment.
    pub bound: f64,
    /// The terms' weights × idfs summed: their bounds are this times one term's of
    /// weight × idf 1 (a bound is linear in it).
    pub weight_idf: f64,
    /// The block last asked about: (block, bound, per field the weight over the length
    /// norm at the block's least length).
    cached: Option<(usize, f64, [f64; TEXT_FIELDS])>,
    /// The block `bound_for` last found (documents are asked in increasing order, so the
    /// next answer is never in an earlier block).
    bound_block: usize,
    /// Per field the weight over the length norm at length 0: the scale of a list of one
    /// block, which has no metas.
    scale_unbounded: [f64; TEXT_FIELDS],
    /// The last answer of `tf_bound`: (block, tf, bound). Consecutive postings mostly
    /// repeat their block and tf (1 in one field), and a bound costs divisions, whose
    /// latency a walk otherwise waits on at every document.
    last_tf_bound: Option<(Option<usize>, [u32; TEXT_FIELDS], f64)>,
}

impl<'a> TermCursor<'a> {
    /// A cursor on the first posting of `list`, the list of each query term of the mask
    /// `terms` (not 0); `None` when the list is empty.
    ///
    /// # Errors
    /// Damaged postings.
    pub fn start(
        terms: u64,
        list: PostingList<'a>,
        ctx: &ScoreContext<'_>,
    ) -> Result<Option<TermCursor<'a>>, DecodeError> {
        debug_assert!(terms != 0);
        let (mut weight_idf, mut words) = (0.0, 0u64);
        for t in mask_terms(terms) {
            weight_idf += ctx.weight_idf(t);
            words |= ctx.word_bit(t);
        }
        let bound = match list.bound() {
            Some(m) => term_bound(weight_idf, ctx.weights, &m, &ctx.avg),
            None => {
                // A list of one block has no metas: bounded at the saturation limit.
                let top_tf = BlockMeta {
                    len_min: [0; TEXT_FIELDS],
                    tf_max: [u8::MAX; TEXT_FIELDS],
                    ..BlockMeta::default()
                };
                term_bound(weight_idf, ctx.weights, &top_tf, &ctx.avg)
            }
        };
        let mut cursor = list.cursor();
        if !cursor.advance()? {
            return Ok(None);
        }
        Ok(Some(TermCursor {
            terms,
            words,
            cursor,
            bound,
            weight_idf,
            cached: None,
            bound_block: 0,
            scale_unbounded: tf_scale(ctx.weights, &[0; TEXT_FIELDS], &ctx.avg),
            last_tf_bound: None,
        }))
    }

    /// Most the term adds to a document in block `b` (meta `meta`), cached for the last
    /// block asked (a walk asks about the same block many times in a row).
    #[inline]
    fn block_bound(&mut self, b: usize, meta: &BlockMeta, ctx: &ScoreContext<'_>) -> f64 {
        match self.cached {
            Some((cached, bound, _)) if cached == b => bound,
            _ => {
                let bound = term_bound(self.weight_idf, ctx.weights, meta, &ctx.avg);
                let scale = tf_scale(ctx.weights, &meta.len_min.map(u32::from), &ctx.avg);
                self.cached = Some((b, bound, scale));
                bound
            }
        }
    }

    /// Most the term adds to the document under the cursor given its tf there (read with
    /// the posting): the score at its block's least field lengths, without reading the
    /// document's own lengths (a random read).
    #[inline]
    pub fn tf_bound(&mut self, ctx: &ScoreContext<'_>) -> f64 {
        let at = self.cursor.current_block_index();
        if let Some((block, tf, bound)) = self.last_tf_bound
            && block == at
            && tf == self.cursor.tf
        {
            return bound;
        }
        if at.is_some()
            && self.cached.map(|c| c.0) != at
            && let Some((b, meta)) = self.cursor.current_block()
        {
            self.block_bound(b, &meta, ctx);
        }
        let scale = match self.cached {
            Some((b, _, scale)) if Some(b) == at => scale,
            // A list of one block has no metas: lengths at their least (0).
            _ => self.scale_unbounded,
        };
        let bound = term_tf_bound(self.weight_idf, &self.cursor.tf, &scale);
        self.last_tf_bound = Some((at, self.cursor.tf, bound));
        bound
    }

    /// Most the term adds to document `doc`, from the metas only: 0 when no block can
    /// hold it, the list's bound when the list has no metas; with the last record for
    /// which that answer holds (documents are asked in increasing order).
    #[inline]
    pub fn bound_for(&mut self, doc: u32, ctx: &ScoreContext<'_>) -> (f64, u32) {
        if self.cursor.list().bound().is_none() {
            return (self.bound, u32::MAX);
        }
        match self.cursor.block_for_from(doc, self.bound_block) {
            Some((b, meta)) => {
                self.bound_block = b;
                (
                    term_bound(self.weight_idf, ctx.weights, &meta, &ctx.avg),
                    meta.last,
                )
            }
            None => (0.0, u32::MAX),
        }
    }
}

/// The query terms of mask `terms`, lowest first.
pub(crate) fn mask_terms(terms: u64) -> impl Iterator<Item = usize> {
    (0..64).filter(move |t| terms & (1u64 << t) != 0)
}
