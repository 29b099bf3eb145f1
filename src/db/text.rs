//! The text index of recent writes (the delta's part), and the state as the text
//! kernel's [`TextSource`]: segments' text sections plus the delta, each node counted once
//! from its newest version. The ranking itself is the kernel's ([`crate::text::search`]).
//!
//! [`TextDelta`] lives in `Delta` and changes only in `State::apply` (a put replaces the
//! node's old terms, a delete removes them), so it is rebuilt by WAL replay on open and a
//! write is searchable once acknowledged, in every process. Its maps are persistent
//! (`imbl`): a commit clones the state in O(1) and an update costs O(terms · log n).
//!
//! Supersession: a segment's postings entry for node *n* counts only when *n* is live, the
//! delta holds no record of *n*, and no newer segment holds a record of *n*. Collection
//! statistics (document count, field length totals, document frequencies) include
//! superseded documents until compaction drops them, as Lucene's do.

use std::sync::Arc;

use imbl::{HashMap as PMap, OrdMap};

use super::state::State;
use crate::error::{Error, Result};
use crate::format::codec::DecodeError;
use crate::format::text::{PairFilter, TEXT_FIELDS, pair_filter_of};
use crate::graph::NodeId;
use crate::model::Node;
use crate::text::{
    ANALYSIS_SINCE_FORMAT, NodeTexts, SegmentIndex, TextHit, TextQuery, TextSource, doc_terms,
    thread_analyzer,
};

/// One node's entry in the delta index.
#[derive(Clone, Debug, PartialEq)]
struct DeltaDoc {
    lens: [u32; TEXT_FIELDS],
    /// Its pair hashes (`DocTerms::pairs`): its phrase-pair filter, and its part of the
    /// segment a checkpoint writes.
    pairs: Box<[u32]>,
    terms: Vec<Arc<[u8]>>,
}

/// One document in a term's delta postings: the term's frequency per field, and the
/// document's field lengths (kept beside every posting so that scoring reads no second
/// map; a put replaces all of a node's postings, so they never disagree).
#[derive(Clone, Copy, Debug, PartialEq)]
struct DeltaPosting {
    tf: [u32; TEXT_FIELDS],
    lens: [u32; TEXT_FIELDS],
}

/// The text index of the nodes written since the last checkpoint (live ones only).
#[derive(Clone, Debug, Default)]
pub(crate) struct TextDelta {
    /// term → node → posting, nodes in increasing order (a persistent B-tree: the ranking
    /// walks a term's list in order, which a hash trie's iteration made slow).
    postings: PMap<Arc<[u8]>, OrdMap<u32, DeltaPosting>>,
    /// node → its lengths and terms (to remove them again).
    docs: PMap<u32, Arc<DeltaDoc>>,
    /// Sum of the documents' field lengths.
    field_len_total: [u64; TEXT_FIELDS],
}

impl TextDelta {
    /// Indexes `node`, replacing its previous entry.
    pub fn put(&mut self, node: &Node) {
        self.remove(node.id.0);
        let dt = doc_terms(&thread_analyzer(), node);
        let mut terms = Vec::with_capacity(dt.terms.len());
        for (term, tf) in dt.terms {
            let term: Arc<[u8]> = Arc::from(term);
            self.postings
                .entry(term.clone())
                .or_default()
                .insert(node.id.0, DeltaPosting { tf, lens: dt.lens });
            terms.push(term);
        }
        for (total, &l) in self.field_len_total.iter_mut().zip(&dt.lens) {
            *total += u64::from(l);
        }
        self.docs.insert(
            node.id.0,
            Arc::new(DeltaDoc {
                lens: dt.lens,
                pairs: dt.pairs.into_boxed_slice(),
                terms,
            }),
        );
    }

    /// Removes `node`'s entry, if any.
    pub fn remove(&mut self, node: u32) {
        let Some(doc) = self.docs.remove(&node) else {
            return;
        };
        for term in &doc.terms {
            let now_empty = match self.postings.get_mut(term) {
                Some(list) => {
                    list.remove(&node);
                    list.is_empty()
                }
                None => false,
            };
            if now_empty {
                self.postings.remove(term);
            }
        }
        for (total, &l) in self.field_len_total.iter_mut().zip(&doc.lens) {
            *total = total.saturating_sub(u64::from(l));
        }
    }

    /// Documents indexed.
    pub fn docs(&self) -> usize {
        self.docs.len()
    }

    /// Feeds this whole index into a segment's text index writer, term by term (one pass
    /// over the postings, no analysis, no per-document look-ups): what a checkpoint
    /// writes for the delta's nodes.
    pub fn write_into(&self, out: &mut crate::format::text::TextIndexWriter) {
        for (&node, doc) in &self.docs {
            out.add_doc_lens(node, doc.lens, &doc.pairs);
        }
        for (term, list) in &self.postings {
            out.add_term(term, list.iter().map(|(&node, p)| (node, p.tf)));
        }
    }

    /// `node`'s index entry as [`doc_terms`] made it (lengths, then terms with their
    /// per-field frequencies, in the same order), read back from this index.
    #[cfg(test)]
    pub fn indexed_terms(&self, node: u32) -> Option<crate::text::DocTerms> {
        let doc = self.docs.get(&node)?;
        let mut terms = Vec::with_capacity(doc.terms.len());
        for term in &doc.terms {
            let tf = self.postings.get(term)?.get(&node)?.tf;
            terms.push((term.to_vec(), tf));
        }
        Some(crate::text::DocTerms {
            lens: doc.lens,
            terms,
            pairs: doc.pairs.to_vec(),
        })
    }
}

impl State {
    /// Ranked text search (see `Snapshot::search_text`): the kernel's ranking over this
    /// state, with an as-of filter made lean first where the state's time cut allows.
    pub fn search_text(&self, q: &TextQuery) -> Result<Vec<TextHit>> {
        match self.lean_filter(&q.filter) {
            Some(filter) => crate::text::search(
                self,
                &TextQuery {
                    filter,
                    ..q.clone()
                },
            ),
            None => crate::text::search(self, q),
        }
    }
}

/// The state as the ranking kernel reads it: segments in the state's order (oldest
/// first), the delta's text index, and records resolved as `State::node` resolves them.
impl TextSource for State {
    fn segments(&self) -> usize {
        self.segs.segments.len()
    }

    fn segment_index(&self, segment: usize) -> Result<Option<SegmentIndex<'_>>> {
        let Some(seg) = self.segs.segments.get(segment) else {
            return Ok(None);
        };
        Ok(seg.text_view()?.map(|view| SegmentIndex {
            view,
            node_ids: seg.node_ids(),
            analysis_current: seg.file.layout.version >= ANALYSIS_SINCE_FORMAT,
        }))
    }

    fn record_of(&self, segment: usize, node: u32, hint: &mut usize) -> Option<usize> {
        self.segs
            .segments
            .get(segment)?
            .record_of_from(NodeId(node), hint)
    }

    fn is_current(&self, segment: usize, node: u32) -> bool {
        let id = NodeId(node);
        !self.node_deleted(id)
            && !self.delta.nodes.contains_key(&node)
            && self
                .segs
                .segments
                .get(segment + 1..)
                .is_none_or(|newer| newer.iter().all(|s| !s.has_node(id)))
    }

    fn corrupt(&self, segment: usize, e: DecodeError) -> Error {
        match self.segs.segments.get(segment) {
            Some(s) => Error::corrupt(
                s.file.path(),
                e.offset as u64,
                format!("text index: {}", e.what),
            ),
            None => Error::corrupt(
                std::path::Path::new(""),
                e.offset as u64,
                format!("text index of segment {segment}: {}", e.what),
            ),
        }
    }

    fn delta_stats(&self) -> (u64, [u64; TEXT_FIELDS]) {
        let text = &self.delta.text;
        (text.docs() as u64, text.field_len_total)
    }

    fn delta_df(&self, term: &[u8]) -> u64 {
        self.delta
            .text
            .postings
            .get(term)
            .map_or(0, |l| l.len() as u64)
    }

    fn delta_pair_filter(&self, node: u32) -> Option<PairFilter> {
        self.delta
            .text
            .docs
            .get(&node)
            .map(|d| pair_filter_of(&d.pairs))
    }

    fn for_each_delta_posting(
        &self,
        term: &[u8],
        mut f: impl FnMut(u32, &[u32; TEXT_FIELDS], &[u32; TEXT_FIELDS]),
    ) {
        if let Some(list) = self.delta.text.postings.get(term) {
            // An `OrdMap`: increasing node order.
            for (&node, p) in list {
                f(node, &p.tf, &p.lens);
            }
        }
    }

    fn node(&self, node: u32) -> Result<Option<Arc<Node>>> {
        State::node(self, NodeId(node))
    }

    fn node_texts(&self, node: u32) -> Result<Option<NodeTexts<'_>>> {
        State::node_texts(self, NodeId(node))
    }

    fn prefetch_texts(&self, node: u32, near: bool) {
        State::prefetch_node_texts(self, NodeId(node), near);
    }
}

#[cfg(test)]
mod tests {
    use super::TextDelta;
    use crate::graph::NodeId;
    use crate::model::{Node, NodeProps};
    use crate::text::{Analyzer, doc_terms};

    fn node(id: u32, title: &str, content: &str) -> Node {
        Node {
            id: NodeId(id),
            key: format!("k{id}"),
            props: NodeProps {
                title: title.into(),
                content: content.into(),
                ..NodeProps::default()
            },
            created_at: 0,
            updated_at: 0,
            valid_from: 0,
            valid_to: None,
        }
    }

    /// A checkpoint writes the delta's entries instead of analyzing again: they must be
    /// exactly what analysis gives, also after updates and removals of other nodes that
    /// share terms.
    #[test]
    fn indexed_terms_equal_a_fresh_analysis() {
        let nodes = [
            node(
                1,
                "Deploy failed",
                "The deploy crashed; rollback (v2.3.1) at 10:42",
            ),
            node(
                2,
                "deploy",
                "deploys deploying DEPLOYED snake_case camelCase 東京都",
            ),
            node(3, "", "crash crash crash, the same word"),
        ];
        let mut delta = TextDelta::default();
        for n in &nodes {
            delta.put(n);
        }
        let updated = node(2, "release", "released again: crash");
        delta.put(&updated);
        delta.remove(3);
        let a = Analyzer::new();
        let want1 = doc_terms(&a, &nodes[0]);
        let got1 = delta.indexed_terms(1).expect("indexed");
        assert_eq!((got1.lens, got1.terms), (want1.lens, want1.terms));
        let want2 = doc_terms(&a, &updated);
        let got2 = delta.indexed_terms(2).expect("indexed");
        assert_eq!((got2.lens, got2.terms), (want2.lens, want2.terms));
        assert!(delta.indexed_terms(3).is_none());

        // What a checkpoint writes from the delta equals what analyzing every live node
        // writes, byte for byte.
        use crate::format::text::TextIndexWriter;
        let mut from_delta = TextIndexWriter::default();
        delta.write_into(&mut from_delta);
        let mut analyzed = TextIndexWriter::default();
        for n in [&nodes[0], &updated] {
            let d = doc_terms(&a, n);
            analyzed.add_doc(n.id.0, d.lens, &d.pairs, d.terms);
        }
        let (x, y) = (
            from_delta.finish(&[1, 2]).expect("sections"),
            analyzed.finish(&[1, 2]).expect("sections"),
        );
        assert_eq!(x.stats, y.stats);
        assert_eq!(x.terms, y.terms);
        assert_eq!(x.postings, y.postings);
        assert_eq!(x.doc_lens, y.doc_lens);
        assert_eq!(x.pairs, y.pairs);
        assert_eq!(x.pair_set, y.pair_set);
    }
}
