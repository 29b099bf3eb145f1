//! The text index of recent writes (the delta's part) and text search over a state:
//! segments' text sections plus the delta, each node counted once from its newest version.
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

use std::collections::HashMap;
use std::sync::Arc;

use imbl::HashMap as PMap;

use super::state::State;
use crate::error::{Error, Result};
use crate::format::text::TEXT_FIELDS;
use crate::graph::NodeId;
use crate::model::Node;
use crate::text::{
    Accumulator, Analyzer, PHRASE_BOOST, ParsedQuery, TextHit, TextQuery, check_query, doc_terms,
    field_texts, has_phrase, idf, snippet,
};

/// One node's entry in the delta index.
#[derive(Clone, Debug, PartialEq)]
struct DeltaDoc {
    lens: [u32; TEXT_FIELDS],
    terms: Vec<Arc<[u8]>>,
}

/// The text index of the nodes written since the last checkpoint (live ones only).
#[derive(Clone, Debug, Default)]
pub(crate) struct TextDelta {
    /// term → node → frequency per field.
    postings: PMap<Arc<[u8]>, PMap<u32, [u32; TEXT_FIELDS]>>,
    /// node → its lengths and terms (to remove them again).
    docs: PMap<u32, Arc<DeltaDoc>>,
    /// Sum of the documents' field lengths.
    field_len_total: [u64; TEXT_FIELDS],
}

impl TextDelta {
    /// Indexes `node`, replacing its previous entry.
    pub fn put(&mut self, node: &Node) {
        self.remove(node.id.0);
        let dt = doc_terms(&Analyzer::new(), node);
        let mut terms = Vec::with_capacity(dt.terms.len());
        for (term, tf) in dt.terms {
            let term: Arc<[u8]> = Arc::from(term);
            self.postings
                .entry(term.clone())
                .or_default()
                .insert(node.id.0, tf);
            terms.push(term);
        }
        for (total, &l) in self.field_len_total.iter_mut().zip(&dt.lens) {
            *total += u64::from(l);
        }
        self.docs.insert(
            node.id.0,
            Arc::new(DeltaDoc {
                lens: dt.lens,
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
}

/// A candidate before the phrase check.
struct Candidate {
    node: u32,
    base: f64,
    acc: Accumulator,
}

impl State {
    /// Ranked text search (see `Snapshot::search_text`).
    pub fn search_text(&self, q: &TextQuery) -> Result<Vec<TextHit>> {
        check_query(q)?;
        let analyzer = Analyzer::new();
        let parsed = ParsedQuery::parse(&analyzer, &q.query)?;
        if parsed.terms.is_empty() {
            return Ok(Vec::new());
        }
        let segments = &self.segs.segments;
        let mut views = Vec::new();
        for (i, s) in segments.iter().enumerate() {
            if let Some(v) = s.text_view()? {
                views.push((i, v));
            }
        }
        let corrupt = |i: usize, e: crate::format::codec::DecodeError| {
            let s = &segments[i];
            Error::corrupt(
                s.file.path(),
                e.offset as u64,
                format!("text index: {}", e.what),
            )
        };
        // Collection statistics over every version (superseded ones included).
        let delta = &self.delta.text;
        let mut docs = delta.docs() as u64;
        let mut totals = delta.field_len_total;
        for (_, v) in &views {
            docs += v.stats.docs;
            for (t, s) in totals.iter_mut().zip(v.stats.field_len_total) {
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
        let mut idfs = Vec::with_capacity(parsed.terms.len());
        for t in &parsed.terms {
            let mut df = delta.postings.get(&*t.term).map_or(0, |l| l.len() as u64);
            for (i, v) in &views {
                if let Some(r) = v.postings(&t.term).map_err(|e| corrupt(*i, e))? {
                    df += r.df();
                }
            }
            idfs.push(idf(docs, df));
        }
        // Scores, from the postings touched only.
        let mut acc: HashMap<u32, Accumulator> = HashMap::new();
        for (i, v) in &views {
            let seg = &segments[*i];
            for (t, &idf) in parsed.terms.iter().zip(&idfs) {
                let Some(mut r) = v.postings(&t.term).map_err(|e| corrupt(*i, e))? else {
                    continue;
                };
                while let Some(p) = r.next_posting().map_err(|e| corrupt(*i, e))? {
                    if !self.text_version_current(*i, p.node) {
                        continue;
                    }
                    let lens = seg
                        .record_of(NodeId(p.node))
                        .map_or([0; TEXT_FIELDS], |r| v.doc_len(r));
                    acc.entry(p.node)
                        .or_default()
                        .add(t, idf, &q.weights, &p.tf, &lens, &avg);
                }
            }
        }
        for (t, &idf) in parsed.terms.iter().zip(&idfs) {
            let Some(list) = delta.postings.get(&*t.term) else {
                continue;
            };
            for (&node, tf) in list {
                let lens = delta.docs.get(&node).map_or([0; TEXT_FIELDS], |d| d.lens);
                acc.entry(node)
                    .or_default()
                    .add(t, idf, &q.weights, tf, &lens, &avg);
            }
        }
        let mut cands: Vec<Candidate> = acc
            .into_iter()
            .map(|(node, acc)| Candidate {
                node,
                base: acc.base(parsed.words),
                acc,
            })
            .collect();
        cands.sort_unstable_by(|a, b| b.base.total_cmp(&a.base).then(a.node.cmp(&b.node)));
        // Walk in base-score order; the phrase bonus raises a score by at most PHRASE_BOOST,
        // so once the `need`-th best final score beats a candidate's base times that, no
        // later candidate can enter.
        let need = q.offset.saturating_add(q.limit);
        let boost_max = if parsed.phrase.len() >= 2 {
            PHRASE_BOOST
        } else {
            1.0
        };
        let mut top: Vec<(f64, u32, Option<Arc<Node>>, Accumulator)> = Vec::new();
        let all_words = |a: &Accumulator| a.words.count_ones() as usize == parsed.words;
        for c in cands {
            if top.len() >= need && c.base * boost_max < top[need - 1].0 {
                break;
            }
            // Only a document holding every significant word can hold the phrase; other
            // candidates need their record only for the filter.
            let phrase_possible = boost_max > 1.0 && all_words(&c.acc);
            let node = if phrase_possible || !q.filter.is_empty() {
                let Some(node) = self.node(NodeId(c.node))? else {
                    continue;
                };
                if !q.filter.is_empty() && !q.filter.matches(&node) {
                    continue;
                }
                Some(node)
            } else {
                None
            };
            let score = match &node {
                Some(n) if phrase_possible && has_phrase(&analyzer, n, &parsed.phrase) => {
                    c.base * PHRASE_BOOST
                }
                _ => c.base,
            };
            let at = top.partition_point(|x| x.0 > score || (x.0 == score && x.1 < c.node));
            if at < need {
                top.insert(at, (score, c.node, node, c.acc));
                top.truncate(need);
            }
        }
        let mut hits = Vec::with_capacity(top.len().saturating_sub(q.offset));
        for (score, id, node, acc) in top.into_iter().skip(q.offset) {
            let node = match node {
                Some(n) => n,
                // Every candidate is a live node's newest version, so its record exists.
                None => match self.node(NodeId(id))? {
                    Some(n) => n,
                    None => continue,
                },
            };
            let field = acc.best_field();
            let texts = field_texts(&node);
            hits.push(TextHit {
                node: NodeId(id),
                score,
                field,
                snippet: snippet(&analyzer, &texts[field.index()], &parsed),
            });
        }
        Ok(hits)
    }

    /// Whether segment `i`'s version of `node` is the one a search counts: the node is
    /// live, the delta holds no newer record and no newer segment holds one.
    fn text_version_current(&self, i: usize, node: u32) -> bool {
        let id = NodeId(node);
        !self.node_deleted(id)
            && !self.delta.nodes.contains_key(&node)
            && self
                .segs
                .segments
                .get(i + 1..)
                .is_none_or(|newer| newer.iter().all(|s| !s.has_node(id)))
    }
}
