//! A query term's cursor over one segment's layout-2 postings, with the bounds the
//! pruned walk asks of it: the list's, a block's (from its meta, cached per block) and a
//! posting's at its tf.

use super::context::ScoreContext;
use super::{term_bound, term_fields_scaled, term_tf_bound, tf_scale};
use crate::format::codec::DecodeError;
use crate::format::text::{BlockMeta, PostingCursor, PostingList, TEXT_FIELDS};

/// A query term's cursor over one segment's postings, with its bound.
pub(crate) struct TermCursor<'a> {
    /// Index of the query term.
    pub term: usize,
    pub cursor: PostingCursor<'a>,
    /// Most the term adds to any document of the segment.
    pub bound: f64,
    pub weight_idf: f64,
    /// The block last asked about: (block, bound, per field the weight over the length
    /// norm at the block's least length).
    cached: Option<(usize, f64, [f64; TEXT_FIELDS])>,
    /// The block `bound_for` last found (documents are asked in increasing order, so the
    /// next answer is never in an earlier block).
    bound_block: usize,
}

impl<'a> TermCursor<'a> {
    /// A cursor on the first posting of query term `term`'s `list`, `None` when the list
    /// is empty.
    ///
    /// # Errors
    /// Damaged postings.
    pub fn start(
        term: usize,
        list: PostingList<'a>,
        ctx: &ScoreContext<'_>,
    ) -> Result<Option<TermCursor<'a>>, DecodeError> {
        let weight_idf = ctx.weight_idf(term);
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
            term,
            cursor,
            bound,
            weight_idf,
            cached: None,
            bound_block: 0,
        }))
    }

    /// The term's contribution to the document under the cursor, per field (`scale`: the
    /// document's [`tf_scale`]).
    #[inline]
    pub fn parts(&self, scale: &[f64; TEXT_FIELDS]) -> [f64; TEXT_FIELDS] {
        term_fields_scaled(self.weight_idf, &self.cursor.tf, scale)
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
        if at.is_some()
            && self.cached.map(|c| c.0) != at
            && let Some((b, meta)) = self.cursor.current_block()
        {
            self.block_bound(b, &meta, ctx);
        }
        let scale = match self.cached {
            Some((b, _, scale)) if Some(b) == at => scale,
            // A list of one block has no metas: lengths at their least (0).
            _ => tf_scale(ctx.weights, &[0; TEXT_FIELDS], &ctx.avg),
        };
        term_tf_bound(self.weight_idf, &self.cursor.tf, &scale)
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
