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

use std::borrow::Cow;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use imbl::HashMap as PMap;

use super::state::{NodeTexts, State};
use crate::error::{Error, Result};
use crate::format::codec::DecodeError;
use crate::format::text::{
    BlockMeta, PostingCursor, PostingList, TEXT_FIELDS, TEXT_LAYOUT_BLOCKED, TextIndexView,
};
use crate::graph::NodeId;
use crate::model::Node;
use crate::text::{
    ALL_WORDS_BOOST, Accumulator, PHRASE_BOOST, ParsedQuery, QueryTerm, TextField, TextHit,
    TextQuery, check_query, doc_terms, field_texts, idf, snippet, term_bound, term_fields_scaled,
    term_tf_bound, text_has_phrase, tf_scale, thread_analyzer,
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
        let dt = doc_terms(&thread_analyzer(), node);
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

    /// Feeds this whole index into a segment's text index writer, term by term (one pass
    /// over the postings, no analysis, no per-document look-ups): what a checkpoint
    /// writes for the delta's nodes.
    pub fn write_into(&self, out: &mut crate::format::text::TextIndexWriter) {
        for (&node, doc) in &self.docs {
            out.add_doc_lens(node, doc.lens);
        }
        for (term, list) in &self.postings {
            out.add_term(term, list.iter().map(|(&node, &tf)| (node, tf)));
        }
    }

    /// `node`'s index entry as [`doc_terms`] made it (lengths, then terms with their
    /// per-field frequencies, in the same order), read back from this index.
    #[cfg(test)]
    pub fn indexed_terms(&self, node: u32) -> Option<crate::text::DocTerms> {
        let doc = self.docs.get(&node)?;
        let mut terms = Vec::with_capacity(doc.terms.len());
        for term in &doc.terms {
            let tf = *self.postings.get(term)?.get(&node)?;
            terms.push((term.to_vec(), tf));
        }
        Some(crate::text::DocTerms {
            lens: doc.lens,
            terms,
        })
    }
}

/// A candidate before the phrase check, ordered by base score (higher first), then node id
/// (lower first): the order a max-heap pops them in.
struct Candidate {
    node: u32,
    base: f64,
    acc: Accumulator,
    /// The segment whose version scored it (checked for supersession when popped); `None`
    /// for the delta, which holds live nodes only.
    seg: Option<usize>,
    /// The document's length (its fields' token counts summed): among equal scores the
    /// shorter document ranks first.
    len: u64,
}

/// A candidate after the phrase check, in the answer's order.
struct Ranked {
    score: f64,
    /// See [`Candidate::len`].
    len: u64,
    node: u32,
    /// The node's record, when the phrase check or the filter read it.
    record: Option<Arc<Node>>,
    acc: Accumulator,
}

impl Ranked {
    /// Whether `self` ranks before `other`: the higher score, then the shorter document,
    /// then the lower node id.
    fn before(&self, other: &Ranked) -> bool {
        self.score > other.score
            || (self.score == other.score && (self.len, self.node) < (other.len, other.node))
    }
}

/// A document's length for the tie-break: its fields' token counts summed.
fn doc_length(lens: &[u32; TEXT_FIELDS]) -> u64 {
    lens.iter().map(|&l| u64::from(l)).sum()
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.base
            .total_cmp(&other.base)
            .then(other.node.cmp(&self.node))
    }
}

/// Per-thread scratch of the segment scorer: a dense accumulator indexed by record index,
/// with a generation stamp per slot so a query never clears it (O(postings touched), not
/// O(records)), and the list of slots touched.
#[derive(Default)]
struct ScoreScratch {
    acc: Vec<Accumulator>,
    stamp: Vec<u32>,
    generation: u32,
    touched: Vec<u32>,
}

impl ScoreScratch {
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

thread_local! {
    static SCRATCH: RefCell<ScoreScratch> = RefCell::new(ScoreScratch::default());
}

impl State {
    /// Ranked text search (see `Snapshot::search_text`).
    pub fn search_text(&self, q: &TextQuery) -> Result<Vec<TextHit>> {
        let lean;
        let q = match self.lean_filter(&q.filter) {
            Some(filter) => {
                lean = TextQuery {
                    filter,
                    ..q.clone()
                };
                &lean
            }
            None => q,
        };
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => self.search_text_with(q, &mut scratch),
            // Re-entered on this thread (not done today): a scratch of its own.
            Err(_) => self.search_text_with(q, &mut ScoreScratch::default()),
        })
    }

    fn search_text_with(&self, q: &TextQuery, scratch: &mut ScoreScratch) -> Result<Vec<TextHit>> {
        check_query(q)?;
        let analyzer = thread_analyzer();
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
        // Each layout-2 view's postings list per query term, looked up once (for its df
        // here and its postings in the walk).
        let mut lists: Vec<Vec<Option<PostingList<'_>>>> = vec![Vec::new(); views.len()];
        let mut idfs = Vec::with_capacity(parsed.terms.len());
        for t in &parsed.terms {
            let mut df = delta.postings.get(&*t.term).map_or(0, |l| l.len() as u64);
            for ((i, v), lists) in views.iter().zip(&mut lists) {
                if v.layout() >= TEXT_LAYOUT_BLOCKED {
                    let list = v.list(&t.term).map_err(|e| corrupt(*i, e))?;
                    df += list.map_or(0, |l| u64::from(l.df()));
                    lists.push(list);
                } else {
                    df += v.df(&t.term).map_err(|e| corrupt(*i, e))?;
                }
            }
            idfs.push(idf(docs, df));
        }
        let need = q.offset.saturating_add(q.limit);
        let boost_max = if parsed.phrase.len() >= 2 {
            PHRASE_BOOST
        } else {
            1.0
        };
        let ctx = ScoreContext {
            terms: &parsed.terms,
            idfs: &idfs,
            weights: &q.weights,
            avg,
            words: parsed.words,
            all_words_mask: words_mask(parsed.words),
            phrase_factor: boost_max * (1.0 + 1e-9),
            // What a base score can still gain (all words, phrase), with room for rounding:
            // a bound times this below the threshold cannot reach the top hits.
            bound_factor: boost_max
                * if parsed.words >= 2 {
                    ALL_WORDS_BOOST
                } else {
                    1.0
                }
                * (1.0 + 1e-9),
        };
        // The `need` best base scores of valid candidates seen so far: a lower bound of the
        // `need`-th best final score, below which a document's bound prunes it.
        let mut top = Threshold::new(need);
        let mut cands: Vec<Candidate> = Vec::new();
        // The delta (small, live nodes only): every posting.
        // Keyed by node id, hashed with foldhash (a search's map needs no DoS resistance).
        // A node's lengths are looked up in the delta once, on its first posting.
        let mut delta_acc: HashMap<
            u32,
            (Accumulator, [u32; TEXT_FIELDS]),
            foldhash::fast::RandomState,
        > = HashMap::with_hasher(foldhash::fast::RandomState::default());
        for (t, &idf) in parsed.terms.iter().zip(&idfs) {
            let Some(list) = delta.postings.get(&*t.term) else {
                continue;
            };
            for (&node, tf) in list {
                let (acc, lens) = delta_acc.entry(node).or_insert_with(|| {
                    let lens = delta.docs.get(&node).map_or([0; TEXT_FIELDS], |d| d.lens);
                    (Accumulator::default(), lens)
                });
                acc.add(t, idf, &q.weights, tf, lens, &avg);
            }
        }
        for (node, (acc, lens)) in delta_acc {
            let base = acc.base(parsed.words);
            top.offer(base, || self.text_filter_ok(q, node))?;
            cands.push(Candidate {
                node,
                base,
                acc,
                seg: None,
                len: doc_length(&lens),
            });
        }
        // Segments: layout 2 by pruned document-at-a-time evaluation; layout 1 (format 4
        // segments until compaction rewrites them) by scoring every posting.
        for ((i, v), lists) in views.iter().zip(&lists) {
            if v.layout() >= TEXT_LAYOUT_BLOCKED {
                let seg_text = SegmentText {
                    index: *i,
                    view: v,
                    lists,
                };
                match self.score_blocked(seg_text, &ctx, &mut top, &mut cands, q) {
                    Ok(()) => {}
                    Err(SearchError::Decode(e)) => return Err(corrupt(*i, e)),
                    Err(SearchError::Engine(e)) => return Err(e),
                }
            } else {
                self.score_every_posting(*i, v, &ctx, scratch, &mut cands)?;
            }
        }
        // O(candidates) heapify, then O(log n) per candidate the walk takes.
        let mut cands = BinaryHeap::from(cands);
        // Walk in base-score order; the phrase bonus raises a score by at most PHRASE_BOOST,
        // so once the `need`-th best final score beats a candidate's base times that, no
        // later candidate can enter.
        // The best `need` so far, in the answer's order (`Ranked::before`).
        let mut top: Vec<Ranked> = Vec::new();
        let all_words = |a: &Accumulator| a.words.count_ones() as usize == parsed.words;
        // Phrase answers per field text: real collections repeat texts (licenses,
        // boilerplate), and the walk may reach many copies.
        // Field texts run to kilobytes: hashed with foldhash (SipHash showed at 4% of a
        // search's time), no DoS resistance needed for a map that lives one search.
        let mut phrase_memo: HashMap<String, bool, foldhash::fast::RandomState> =
            HashMap::with_hasher(foldhash::fast::RandomState::default());
        let mut in_field = |text: &str| -> bool {
            if let Some(&known) = phrase_memo.get(text) {
                return known;
            }
            let found = text_has_phrase(&analyzer, text, &parsed.phrase);
            phrase_memo.insert(text.to_owned(), found);
            found
        };
        while let Some(c) = cands.pop() {
            if top.len() >= need && c.base * boost_max < top[need - 1].score {
                break;
            }
            if c.seg.is_some_and(|i| !self.text_version_current(i, c.node)) {
                continue;
            }
            // Only a document holding every significant word can hold the phrase, and only
            // in a field holding every one in its exact form; other candidates need their
            // record only for the filter.
            let phrase_fields = c.acc.phrase_fields(parsed.words);
            let phrase_possible =
                boost_max > 1.0 && all_words(&c.acc) && phrase_fields.contains(&true);
            // The filter needs the whole record; a phrase check only the texts of the
            // fields that may hold the phrase (title and content borrowed from the segment,
            // no other field decoded or copied: a walk may check thousands of near-equal
            // candidates).
            let node = if q.filter.is_empty() {
                None
            } else {
                let Some(node) = self.node(NodeId(c.node))? else {
                    continue;
                };
                if !q.filter.matches(&node) {
                    continue;
                }
                Some(node)
            };
            let has_phrase = phrase_possible && {
                // Keeps a node read here alive for its texts.
                let whole: Arc<Node>;
                let texts = match &node {
                    Some(n) => field_texts(n),
                    None => match self.node_texts(NodeId(c.node))? {
                        None => continue,
                        // Title and content read in place (the properties' field cannot
                        // hold the phrase).
                        Some(NodeTexts::Record(t)) if !phrase_fields[TextField::Props.index()] => [
                            Cow::Borrowed(t.title),
                            Cow::Borrowed(t.content),
                            Cow::Borrowed(""),
                        ],
                        Some(NodeTexts::Node(n)) => {
                            whole = n;
                            field_texts(&whole)
                        }
                        // The properties' text needs them parsed: the whole record.
                        Some(NodeTexts::Record(_)) => {
                            let Some(n) = self.node(NodeId(c.node))? else {
                                continue;
                            };
                            whole = n;
                            field_texts(&whole)
                        }
                    },
                };
                texts
                    .iter()
                    .zip(phrase_fields)
                    .any(|(text, on)| on && in_field(text))
            };
            let score = if has_phrase {
                c.base * PHRASE_BOOST
            } else {
                c.base
            };
            let ranked = Ranked {
                score,
                len: c.len,
                node: c.node,
                record: node,
                acc: c.acc,
            };
            let at = top.partition_point(|x| x.before(&ranked));
            if at < need {
                top.insert(at, ranked);
                top.truncate(need);
            }
        }
        let mut hits = Vec::with_capacity(top.len().saturating_sub(q.offset));
        for Ranked {
            score,
            node: id,
            record: node,
            acc,
            ..
        } in top.into_iter().skip(q.offset)
        {
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

/// What scoring a document needs besides its postings.
struct ScoreContext<'q> {
    terms: &'q [QueryTerm],
    idfs: &'q [f64],
    weights: &'q [f64; TEXT_FIELDS],
    avg: [f64; TEXT_FIELDS],
    words: usize,
    /// Bits `0..words`: every query word.
    all_words_mask: u64,
    /// Most the phrase boost multiplies a base score by (with room for rounding).
    phrase_factor: f64,
    /// Most both boosts together multiply a sum of term scores by (with room for
    /// rounding); both need every query word in the document.
    bound_factor: f64,
}

impl ScoreContext<'_> {
    /// Query term `t`'s weight × idf.
    fn weight_idf(&self, t: usize) -> f64 {
        self.terms[t].weight * self.idfs[t]
    }

    /// The word bit of query term `t` (0 for a whole identifier, which is no word).
    fn word_bit(&self, t: usize) -> u64 {
        self.terms[t].word.map_or(0, |w| 1u64 << w)
    }

    /// Most the boosts multiply the term scores of a document that can hold at most the
    /// query words in `possible` by: both boosts need every word, so a document missing
    /// one gets neither (factor 1, with room for rounding).
    fn factor(&self, possible: u64) -> f64 {
        if possible & self.all_words_mask == self.all_words_mask {
            self.bound_factor
        } else {
            1.0 + 1e-9
        }
    }

    /// Most the phrase boost multiplies a document's base score by (its accumulator
    /// `acc`): only a document holding every word can hold the phrase.
    fn final_factor(&self, acc: &Accumulator) -> f64 {
        if acc.words & self.all_words_mask == self.all_words_mask {
            self.phrase_factor
        } else {
            1.0 + 1e-9
        }
    }
}

/// Bits `0..words` set (`words` ≤ 64).
fn words_mask(words: usize) -> u64 {
    if words >= 64 {
        u64::MAX
    } else {
        (1u64 << words) - 1
    }
}

/// The first segment format version whose text index the current analysis made (an
/// earlier analysis stemmed some words differently, or not at all), so that every
/// document holding an exact term `requires` a stem term also holds that stem term
/// ([`crate::text::analyze::stem_implied`]). A change to analysis must raise the format
/// version and this with it.
pub(crate) const ANALYSIS_SINCE_FORMAT: u32 = 8;

/// How many postings ahead of an essential cursor the walk starts loading a document's
/// lengths.
const PREFETCH_AHEAD: u32 = 8;

/// Most hits (offset + limit) for which a segment's walk primes its threshold first
/// (`State::prime_threshold`).
const PRIME_NEED_MAX: usize = 128;
/// How many of the highest-bound terms prime it.
const PRIME_TERMS: usize = 3;
/// How many primed documents are scored by all of those terms.
const PRIME_RESCORE_MAX: usize = 64;

/// The `need` best base scores of valid candidates offered so far (a min-heap).
struct Threshold {
    need: usize,
    heap: BinaryHeap<std::cmp::Reverse<OrdF64>>,
}

#[derive(Clone, Copy, PartialEq)]
struct OrdF64(f64);

impl Eq for OrdF64 {}

impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Threshold {
    fn new(need: usize) -> Threshold {
        Threshold {
            need,
            heap: BinaryHeap::new(),
        }
    }

    /// The `need`-th best base score offered, −∞ until `need` were. Every valid document
    /// offered has a final score ≥ its base, so `need` documents reach this value and one
    /// whose final score must stay below it is not in the answer.
    fn value(&self) -> f64 {
        match self.heap.peek() {
            Some(std::cmp::Reverse(OrdF64(v))) if self.heap.len() >= self.need => *v,
            _ => f64::NEG_INFINITY,
        }
    }

    /// Offers a document's base score; `valid` (checked only when the score would count)
    /// says whether the document may be a hit (current version, passes the filter).
    fn offer(&mut self, base: f64, valid: impl FnOnce() -> Result<bool>) -> Result<()> {
        if self.heap.len() < self.need || base > self.value() {
            if !valid()? {
                return Ok(());
            }
            self.heap.push(std::cmp::Reverse(OrdF64(base)));
            if self.heap.len() > self.need {
                self.heap.pop();
            }
        }
        Ok(())
    }
}

/// One segment's text index as a search sees it: the segment's position in the state, its
/// view, and its postings list per query term (`None`: not indexed there).
#[derive(Clone, Copy)]
struct SegmentText<'v, 'a> {
    index: usize,
    view: &'v TextIndexView<'a>,
    lists: &'v [Option<PostingList<'a>>],
}

/// A query term's cursor over one segment's postings, with its bound.
struct TermCursor<'a> {
    /// Index of the query term.
    term: usize,
    cursor: PostingCursor<'a>,
    /// Most the term adds to any document of the segment.
    bound: f64,
    weight_idf: f64,
    /// The block last asked about: (block, bound, per field the weight over the length
    /// norm at the block's least length).
    cached: Option<(usize, f64, [f64; TEXT_FIELDS])>,
    /// The block `bound_for` last found (documents are asked in increasing order, so the
    /// next answer is never in an earlier block).
    bound_block: usize,
}

impl TermCursor<'_> {
    /// The term's contribution to the document under the cursor, per field (`scale`: the
    /// document's [`tf_scale`]).
    fn parts(&self, scale: &[f64; TEXT_FIELDS]) -> [f64; TEXT_FIELDS] {
        term_fields_scaled(self.weight_idf, &self.cursor.tf, scale)
    }

    /// Most the term adds to a document in block `b` (meta `meta`), cached for the last
    /// block asked (a walk asks about the same block many times in a row).
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
    fn tf_bound(&mut self, ctx: &ScoreContext<'_>) -> f64 {
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
    fn bound_for(&mut self, doc: u32, ctx: &ScoreContext<'_>) -> (f64, u32) {
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

impl State {
    /// Whether `node` (a live node's newest version) passes the query's filter.
    fn text_filter_ok(&self, q: &TextQuery, node: u32) -> Result<bool> {
        if q.filter.is_empty() {
            return Ok(true);
        }
        Ok(self
            .node(NodeId(node))?
            .is_some_and(|n| q.filter.matches(&n)))
    }

    /// Scores segment `i`'s layout-2 index document at a time (MaxScore with block
    /// bounds): query terms are ordered by their bound; the longest prefix whose bounds
    /// together cannot lift a document above the threshold is *non-essential*: only
    /// documents of the other (essential) terms are visited, and a non-essential term's
    /// list is only sought to those documents, skipping whole blocks. A document is
    /// dropped as soon as its score so far plus the bounds of the terms not yet read (per
    /// block where known) falls below the threshold; the survivors are scored exactly, in
    /// query-term order (the same sums an exhaustive pass makes) and become candidates.
    fn score_blocked(
        &self,
        seg_text: SegmentText<'_, '_>,
        ctx: &ScoreContext<'_>,
        top: &mut Threshold,
        cands: &mut Vec<Candidate>,
        q: &TextQuery,
    ) -> std::result::Result<(), SearchError> {
        let SegmentText {
            index: i,
            view: v,
            lists,
        } = seg_text;
        let seg = &self.segs.segments[i];
        let mut terms: Vec<TermCursor<'_>> = Vec::new();
        for (t, list) in lists.iter().enumerate() {
            let Some(list) = *list else {
                continue;
            };
            let weight_idf = ctx.weight_idf(t);
            let bound = match list.bound() {
                Some(m) => term_bound(weight_idf, ctx.weights, &m, &ctx.avg),
                None => {
                    let top_tf = BlockMeta {
                        len_min: [0; TEXT_FIELDS],
                        tf_max: [u8::MAX; TEXT_FIELDS],
                        ..BlockMeta::default()
                    };
                    term_bound(weight_idf, ctx.weights, &top_tf, &ctx.avg)
                }
            };
            let mut cursor = list.cursor();
            if cursor.advance()? {
                terms.push(TermCursor {
                    term: t,
                    cursor,
                    bound,
                    weight_idf,
                    cached: None,
                    bound_block: 0,
                });
            }
        }
        if terms.is_empty() {
            return Ok(());
        }
        terms.sort_by(|a, b| a.bound.total_cmp(&b.bound));
        let n = terms.len();
        // prefix[j]: the bounds of terms[..j] together; prefix_words[j]: their words (a
        // document holds at most the words of its terms, and without all of them it gets
        // no boost: `ScoreContext::factor`).
        let mut prefix = vec![0.0f64; n + 1];
        let mut prefix_words = vec![0u64; n + 1];
        for j in 0..n {
            prefix[j + 1] = prefix[j] + terms[j].bound;
            prefix_words[j + 1] = prefix_words[j] | ctx.word_bit(terms[j].term);
        }
        let mut slot_of = vec![None; ctx.terms.len()];
        for (j, t) in terms.iter().enumerate() {
            slot_of[t.term] = Some(j);
        }
        // Per slot, the slot of the term it requires (an exact word's stem): where that one
        // is absent, so is this one, and neither its bound nor its word can count. Only for
        // segments whose analysis makes that true (`ANALYSIS_SINCE_FORMAT`).
        let analysis_current = seg.file.layout.version >= ANALYSIS_SINCE_FORMAT;
        let req_slot: Vec<Option<usize>> = terms
            .iter()
            .map(|t| {
                ctx.terms[t.term]
                    .requires
                    .filter(|_| analysis_current)
                    .and_then(|r| slot_of.get(r).copied().flatten())
            })
            .collect();
        // prefix_req[j]: the slots terms[..j] require (n ≤ QUERY_TERMS_MAX = 64 slots).
        let mut prefix_req = vec![0u64; n + 1];
        for j in 0..n {
            prefix_req[j + 1] = prefix_req[j] | req_slot[j].map_or(0, |r| 1u64 << r);
        }
        let bounds: Vec<f64> = terms.iter().map(|t| t.bound).collect();
        let bits: Vec<u64> = terms.iter().map(|t| ctx.word_bit(t.term)).collect();
        // The bounds and words of terms[..j] together, leaving out the terms whose required
        // term is known absent (`absent`: a mask of slots).
        let rest = |j: usize, absent: u64| -> (f64, u64) {
            if absent & prefix_req[j] == 0 {
                return (prefix[j], prefix_words[j]);
            }
            let (mut sum, mut words) = (0.0, 0u64);
            for k in 0..j {
                if req_slot[k].is_some_and(|r| absent & (1u64 << r) != 0) {
                    continue;
                }
                sum += bounds[k];
                words |= bits[k];
            }
            (sum, words)
        };
        // outside[j]: the bounds and words of terms[..j] for a document none of terms[j..]
        // is at (what the split at j leaves to documents outside the essential lists).
        let outside: Vec<(f64, u64)> = (0..=n)
            .map(|j| {
                let at_or_after = u32::try_from(j)
                    .ok()
                    .and_then(|j| u64::MAX.checked_shl(j))
                    .unwrap_or(0);
                rest(j, at_or_after)
            })
            .collect();
        // The last `rest(essential, absent)` of the bound check: (essential, absent, answer).
        let mut rest_memo: Option<(usize, u64, (f64, u64))> = None;
        let mut at_doc = vec![false; n];
        // Per term: its parts of the score of the document under consideration (valid
        // where `at_doc`).
        let mut parts = vec![[0.0; TEXT_FIELDS]; n];
        let node_ids = seg.node_ids();
        let primed =
            self.prime_threshold(i, v, ctx, &terms[n.saturating_sub(PRIME_TERMS)..], top, q)?;
        // terms[..essential] are non-essential.
        let mut essential = 0usize;
        // The non-essential terms' block bounds summed: (`essential` when summed, the
        // last record for which every one of them holds, the sum). Recomputed only when
        // the walk passes a block of one of them or the split moves.
        let mut ne_bounds: Option<(usize, u32, f64)> = None;
        loop {
            let theta = top.value();
            while essential < n
                && outside[essential + 1].0 * ctx.factor(outside[essential + 1].1) < theta
            {
                essential += 1;
            }
            if essential >= n {
                break;
            }
            let Some(doc) = terms[essential..]
                .iter()
                .filter(|t| !t.cursor.done())
                .map(|t| t.cursor.rec)
                .min()
            else {
                break;
            };
            // The words `doc` can hold: those of the essential terms at it, and of every
            // non-essential term until its list is sought.
            let mut found_words = 0u64;
            // Slots known not to hold `doc`.
            let mut absent = 0u64;
            for (j, t) in terms.iter().enumerate().skip(essential) {
                at_doc[j] = !t.cursor.done() && t.cursor.rec == doc;
                if at_doc[j] {
                    found_words |= ctx.word_bit(t.term);
                } else {
                    absent |= 1u64 << j;
                }
            }
            let (rest_sum, rest_words) = match rest_memo {
                Some((e, a, known)) if e == essential && a == absent => known,
                _ => {
                    let known = rest(essential, absent);
                    rest_memo = Some((essential, absent, known));
                    known
                }
            };
            let factor = ctx.factor(found_words | rest_words);
            // Bounds first, read without the document's lengths: the essential terms' at
            // their tf with their blocks' least lengths, and the blocks of the
            // non-essential ones that would hold `doc`.
            let mut block_sum = 0.0;
            // The essential terms' bounds at their tfs.
            let mut tf_sum = 0.0;
            if theta > f64::NEG_INFINITY {
                for (j, t) in terms.iter_mut().enumerate().skip(essential) {
                    if at_doc[j] {
                        tf_sum += t.tf_bound(ctx);
                    }
                }
                block_sum = tf_sum;
                if block_sum * factor < theta {
                    if ne_bounds
                        .is_none_or(|(sum_for, until, _)| sum_for != essential || doc > until)
                    {
                        let (mut sum, mut until) = (0.0, u32::MAX);
                        for t in &mut terms[..essential] {
                            let (bound, last) = t.bound_for(doc, ctx);
                            sum += bound;
                            until = until.min(last);
                        }
                        ne_bounds = Some((essential, until, sum));
                    }
                    // Both bound the non-essential terms: their blocks' bounds, or their
                    // lists' without those of terms known absent.
                    block_sum += ne_bounds.map_or(rest_sum, |(_, _, sum)| sum.min(rest_sum));
                }
            }
            let mut alive = theta == f64::NEG_INFINITY || block_sum * factor >= theta;
            // Then each non-essential list, highest bound first, is sought to the document
            // and bounded at its tf there with its block's least lengths: a document lacking
            // words it cannot do without dies before its lengths are read (a random read).
            if alive {
                for j in (0..essential).rev() {
                    let t = &mut terms[j];
                    // A term whose required term is absent is too: no seek.
                    at_doc[j] = req_slot[j].is_none_or(|r| absent & (1u64 << r) == 0)
                        && t.cursor.seek(doc)?
                        && t.cursor.rec == doc;
                    if at_doc[j] {
                        tf_sum += t.tf_bound(ctx);
                        found_words |= ctx.word_bit(t.term);
                    } else {
                        absent |= 1u64 << j;
                    }
                    let (rest_sum, rest_words) = rest(j, absent);
                    alive = (tf_sum + rest_sum) * ctx.factor(found_words | rest_words) >= theta;
                    if !alive {
                        break;
                    }
                }
            }
            let mut lens = [0; TEXT_FIELDS];
            if alive {
                // Every term is resolved: the exact parts, from the document's lengths.
                lens = v.doc_len(doc as usize);
                let scale = tf_scale(ctx.weights, &lens, &ctx.avg);
                for (j, t) in terms.iter().enumerate() {
                    if at_doc[j] {
                        parts[j] = t.parts(&scale);
                    }
                }
            }
            if alive {
                // The same sums, in query-term order, that an exhaustive pass makes.
                let mut acc = Accumulator::default();
                for (t, slot) in slot_of.iter().enumerate() {
                    if let Some(j) = *slot
                        && at_doc[j]
                    {
                        acc.add_parts(&ctx.terms[t], parts[j], &terms[j].cursor.tf);
                    }
                }
                let base = acc.base(ctx.words);
                if base * ctx.final_factor(&acc) >= theta {
                    let node = *node_ids.get(doc as usize).ok_or_else(|| {
                        SearchError::Decode(DecodeError::new(
                            0,
                            format!("postings name record {doc}, which does not exist"),
                        ))
                    })?;
                    // A primed document is in the threshold already (by a lower score).
                    if primed.binary_search(&doc).is_err() {
                        top.offer(base, || {
                            Ok(self.text_version_current(i, node)
                                && self.text_filter_ok(q, node)?)
                        })?;
                    }
                    cands.push(Candidate {
                        node,
                        base,
                        acc,
                        seg: Some(i),
                        len: doc_length(&lens),
                    });
                }
            }
            at_doc.iter_mut().for_each(|x| *x = false);
            for t in &mut terms[essential..] {
                if !t.cursor.done() && t.cursor.rec == doc && t.cursor.advance()? {
                    // The next document is one of these: its lengths start loading now,
                    // and those of a document a few postings on (a random read each).
                    v.prefetch_doc_len(t.cursor.rec as usize);
                    if let Some(later) = t.cursor.ahead(PREFETCH_AHEAD) {
                        v.prefetch_doc_len(later as usize);
                    }
                }
            }
        }
        Ok(())
    }

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
    fn prime_threshold(
        &self,
        i: usize,
        v: &TextIndexView<'_>,
        ctx: &ScoreContext<'_>,
        best: &[TermCursor<'_>],
        top: &mut Threshold,
        q: &TextQuery,
    ) -> std::result::Result<Vec<u32>, SearchError> {
        let mut primed = Vec::new();
        if top.need > PRIME_NEED_MAX {
            return Ok(primed);
        }
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
        let keep = PRIME_RESCORE_MAX.max(top.need);
        if scored.len() > keep {
            scored.select_nth_unstable_by(keep - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            scored.truncate(keep);
        }
        scored.sort_unstable_by_key(|x| x.1);
        for &(_, rec) in &scored {
            v.prefetch_doc_len(rec as usize);
        }
        let lens: Vec<[u32; TEXT_FIELDS]> = scored
            .iter()
            .map(|&(_, rec)| v.doc_len(rec as usize))
            .collect();
        let mut accs = vec![Accumulator::default(); scored.len()];
        for t in best {
            let mut cursor = t.cursor.list().cursor();
            for (j, &(_, rec)) in scored.iter().enumerate() {
                if !cursor.seek(rec)? {
                    break;
                }
                if cursor.rec == rec {
                    let term = t.term;
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
        // Exact scores of some of each document's terms: at most its base score.
        let mut scored: Vec<(f64, u32)> = scored
            .iter()
            .zip(&accs)
            .map(|(&(_, rec), acc)| (acc.base(ctx.words) * (1.0 - 1e-9), rec))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let node_ids = self.segs.segments[i].node_ids();
        for (score, rec) in scored {
            if primed.len() >= top.need {
                break;
            }
            let Some(&node) = node_ids.get(rec as usize) else {
                continue;
            };
            if self.text_version_current(i, node) && self.text_filter_ok(q, node)? {
                top.offer(score, || Ok(true))?;
                primed.push(rec);
            }
        }
        primed.sort_unstable();
        Ok(primed)
    }

    /// Scores every posting of segment `i`'s layout-1 index into the dense scratch
    /// accumulator by record index; every touched document becomes a candidate.
    fn score_every_posting(
        &self,
        i: usize,
        v: &TextIndexView<'_>,
        ctx: &ScoreContext<'_>,
        scratch: &mut ScoreScratch,
        cands: &mut Vec<Candidate>,
    ) -> Result<()> {
        let seg = &self.segs.segments[i];
        let corrupt = |e: DecodeError| {
            Error::corrupt(
                seg.file.path(),
                e.offset as u64,
                format!("text index: {}", e.what),
            )
        };
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
                let Some((acc, lens)) = seg
                    .record_of_from(NodeId(p.node), &mut hint)
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
            let (Some(&node), Some(acc)) = (seg.node_ids().get(rec), scratch.acc.get(rec)) else {
                continue;
            };
            cands.push(Candidate {
                node,
                base: acc.base(ctx.words),
                acc: *acc,
                seg: Some(i),
                len: doc_length(&v.doc_len(rec)),
            });
        }
        Ok(())
    }
}

/// Appends `(record, bound)` for every posting of `t`'s block with the highest block bound
/// (all of a list without metas, which is one block): the most `t` adds to that document,
/// at its tf with the block's least lengths (its own are not read).
fn best_block_bounds(
    t: &TermCursor<'_>,
    ctx: &ScoreContext<'_>,
    out: &mut Vec<(u32, f64)>,
) -> std::result::Result<(), DecodeError> {
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

/// Why a segment's pruned scoring stopped: damaged postings, or an error reading a record.
enum SearchError {
    Decode(DecodeError),
    Engine(Error),
}

impl From<DecodeError> for SearchError {
    fn from(e: DecodeError) -> SearchError {
        SearchError::Decode(e)
    }
}

impl From<Error> for SearchError {
    fn from(e: Error) -> SearchError {
        SearchError::Engine(e)
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
            analyzed.add_doc(n.id.0, d.lens, d.terms);
        }
        let (x, y) = (
            from_delta.finish(&[1, 2]).expect("sections"),
            analyzed.finish(&[1, 2]).expect("sections"),
        );
        assert_eq!(x.stats, y.stats);
        assert_eq!(x.terms, y.terms);
        assert_eq!(x.postings, y.postings);
        assert_eq!(x.doc_lens, y.doc_lens);
    }
}
