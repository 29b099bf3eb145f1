//! What ranking reads from a store: the narrow trait between the text kernel and the
//! database, as [`Adjacency`](crate::traverse::Adjacency) is for traversal.
//!
//! A store is a stack of *segments* (oldest first), each with an optional text index in
//! its sections (`format::text`), and a *delta* of recent writes with postings of its own.
//! A node may have a version in several of them; the newest counts (delta, then the
//! newest segment holding a record of it), and a deleted node counts nowhere. The source
//! answers those questions; the kernel does the ranking.

use std::sync::Arc;

use super::context::ScoreContext;
use crate::error::{Error, Result};
use crate::format::codec::DecodeError;
use crate::format::record::RecordTexts;
use crate::format::text::{PairFilter, TEXT_FIELDS, TextIndexView};
use crate::model::Node;

/// The first segment format version whose analysis agrees with the current one on
/// what pruning relies on (an earlier analysis stemmed some words differently, or not
/// at all): every document holding an exact term that `requires` a stem term also holds
/// that stem term ([`crate::text::analyze::stem_implied`]), and its phrase units (and so
/// its pair filters) are cut as a query's are. A change to analysis must raise the format
/// version, and this with it when it changes either (format 12 did not: it added the
/// stems of names joined by `_` and `-`, which no exact term requires).
pub const ANALYSIS_SINCE_FORMAT: u32 = 8;

/// One segment's text index as ranking reads it.
#[derive(Debug)]
pub struct SegmentIndex<'a> {
    /// The segment's text sections.
    pub view: TextIndexView<'a>,
    /// The node id of each record index (increasing): what a blocked (layout 2 or 3) posting
    /// names.
    pub node_ids: &'a [u32],
    /// Whether the current analysis wrote this index (format ≥ [`ANALYSIS_SINCE_FORMAT`]):
    /// only then may the walk drop an exact term whose stem term is absent.
    pub analysis_current: bool,
}

impl SegmentIndex<'_> {
    /// Record `rec`'s phrase-pair filter, when this segment has one the current
    /// analysis wrote (units cut as the query's are).
    #[inline]
    pub(crate) fn pair_filter(&self, rec: usize) -> Option<&PairFilter> {
        if self.analysis_current {
            self.view.pair_filter(rec)
        } else {
            None
        }
    }

    /// Whether no record of the segment holds a phrase whose pairs hash to `pairs`
    /// (the query's: `ParsedQuery::phrase_pair_hashes`), as its phrase-pair
    /// set tells (`false` where there is none, or analysis cut units otherwise, or the
    /// phrase has fewer than two units).
    #[inline]
    pub(crate) fn rules_out_phrase(&self, pairs: &[u32]) -> bool {
        self.analysis_current && !pairs.is_empty() && self.view.pair_set_holds(pairs) == Some(false)
    }

    /// Whether record `rec` may hold the query's phrase as far as its phrase-pair filter
    /// tells (`true` where there is none to read).
    #[inline]
    pub(crate) fn allows_phrase(&self, ctx: &ScoreContext<'_>, rec: usize) -> bool {
        ctx.phrase_allowed(self.pair_filter(rec))
    }
}

/// A node's indexed texts as [`TextSource::node_texts`] finds them.
#[derive(Debug)]
pub enum NodeTexts<'a> {
    /// A whole node (a node of the delta, in memory already).
    Node(Arc<Node>),
    /// A segment record's title and content, borrowed from the segment (its properties
    /// not decoded).
    Record(RecordTexts<'a>),
}

/// A store's text index and records, as the ranking kernel ([`crate::text::search`])
/// reads them. Node ids are `u32`s of [`crate::graph::NodeId`].
pub trait TextSource {
    /// The number of segments; segment indices run `0..segments()`, oldest first.
    fn segments(&self) -> usize;

    /// Segment `segment`'s text index, `None` when it has none.
    ///
    /// # Errors
    /// `Corrupt` when its text sections are damaged.
    fn segment_index(&self, segment: usize) -> Result<Option<SegmentIndex<'_>>>;

    /// The record index of `node` in segment `segment` (read by layout-1 indexes, whose
    /// postings name nodes): nodes are asked in increasing order, `hint` carries the
    /// previous answer.
    fn record_of(&self, segment: usize, node: u32, hint: &mut usize) -> Option<usize>;

    /// Whether segment `segment`'s version of `node` is the one a search counts: the
    /// node is live, the delta holds no record of it, and no newer segment holds one.
    fn is_current(&self, segment: usize, node: u32) -> bool;

    /// The error reporting damaged text index bytes of segment `segment`.
    fn corrupt(&self, segment: usize, error: DecodeError) -> Error;

    /// The delta's indexed documents (live nodes only) and their field lengths summed.
    fn delta_stats(&self) -> (u64, [u64; TEXT_FIELDS]);

    /// How many of the delta's documents hold `term`.
    fn delta_df(&self, term: &[u8]) -> u64;

    /// Calls `f` with the node, its frequency per field and its field lengths for every
    /// delta document holding `term`, in increasing node order (the ranking merges the
    /// query terms' lists by node instead of hashing every posting).
    fn for_each_delta_posting(
        &self,
        term: &[u8],
        f: impl FnMut(u32, &[u32; TEXT_FIELDS], &[u32; TEXT_FIELDS]),
    );

    /// The phrase-pair filter the delta indexed `node` with, `None` when the delta holds
    /// no document of it.
    fn delta_pair_filter(&self, node: u32) -> Option<PairFilter>;

    /// The newest record of `node`, `None` when the node is not live.
    ///
    /// # Errors
    /// A damaged record.
    fn node(&self, node: u32) -> Result<Option<Arc<Node>>>;

    /// The texts of `node`'s newest version, reading as little as the source can (the
    /// phrase check reads title and content of many candidates); by default the whole
    /// record.
    ///
    /// # Errors
    /// A damaged record.
    fn node_texts(&self, node: u32) -> Result<Option<NodeTexts<'_>>> {
        Ok(self.node(node)?.map(NodeTexts::Node))
    }

    /// A hint that [`TextSource::node_texts`] of `node` will be asked: shortly when
    /// `near` (the source may start loading the texts), else a while later (it may start
    /// loading what finds them). By default nothing; never fails, changes nothing.
    fn prefetch_texts(&self, node: u32, near: bool) {
        let _ = (node, near);
    }
}
