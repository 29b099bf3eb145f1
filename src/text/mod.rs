//! Full-text search kernel: analysis, query parsing, BM25 scoring and ranking, phrase
//! checks and snippets. Pure compute, no I/O: the index it ranks lives in segment
//! sections (`format::text`) and in the database's delta, and the kernel reads both
//! through the narrow [`TextSource`] trait (which `db` implements), as traversal reads a
//! graph through `Adjacency`.
//!
//! Scoring (see DESIGN.md §13) is BM25F: for each query term *t* and document *d*, the
//! fields' frequencies are weighted and length-normalized, then summed and saturated once:
//! `x = Σ_f w_f · tf_f / (1 − b + b·len_f/avg_f)`, score `weight(t) · idf(t) · x·(k1+1) /
//! (x + k1)`, with k1 = 1.2, b = 0.75 and `idf = ln(1 + (N − df + 0.5)/(df + 0.5))`; exact
//! terms weigh 1, stems [`STEM_WEIGHT`]. A document matching every query word gets ×[`ALL_WORDS_BOOST`],
//! and one holding the query's words as a phrase in one field a further ×[`PHRASE_BOOST`].
//!
//! | module | what it holds |
//! |---|---|
//! | [`analyze`] | tokens and terms of a text |
//! | `source` | [`TextSource`], what ranking reads from a store |
//! | `rank` | [`search`]: the query plan, the delta, dispatch per segment |
//! | `context` | what scoring a document needs besides its postings; boost factors |
//! | `threshold` | θ, the `offset + limit`-th best base score offered so far |
//! | `cursor` | a query term's cursor over a segment's postings, with its bounds |
//! | `maxscore` | a blocked (layout 2 or 3) segment scored document at a time (MaxScore, block bounds) |
//! | `phrase` | whether a text holds the query's phrase, and a cheap pre-check |
//! | `prime` | θ raised before a segment's walk |
//! | `exhaustive` | a layout-1 segment scored posting by posting |
//! | `topk` | candidates to hits: supersession, filter, phrase, order, snippets |

pub mod analyze;
mod context;
mod cursor;
mod exhaustive;
mod maxscore;
mod phrase;
mod prime;
mod rank;
mod source;
mod threshold;
mod topk;

use std::borrow::Cow;
use std::hash::BuildHasher;

#[cfg_attr(not(feature = "internals"), allow(unused_imports))] // the fuzz target uses `Token`
pub use analyze::{Analyzer, TermKind, Token};
// `search_with` and its scratch: for the kernel's own tests and the `internals` feature.
#[cfg_attr(not(feature = "internals"), allow(unused_imports))]
pub use exhaustive::RankScratch;
#[cfg(any(test, feature = "internals"))]
pub use phrase::{has_phrase, has_phrase_in};
#[cfg(any(test, feature = "internals"))]
pub use phrase::{phrase_may_occur, text_has_phrase};
#[cfg_attr(not(feature = "internals"), allow(unused_imports))]
pub use rank::{search, search_with};
pub use source::{ANALYSIS_SINCE_FORMAT, NodeTexts, SegmentIndex, TextSource};

use crate::error::{Error, Result};
use crate::filter::NodeFilter;
use crate::format::text::{PairFilter, TEXT_FIELDS, pair_filter_of, pair_hash, unit_hash};
use crate::graph::NodeId;
use crate::model::Node;

thread_local! {
    /// This thread's analyzer: its stem memo carries over from one search or index update
    /// to the next (a query's words and a hit's words recur; stemming a word costs far
    /// more than looking its stem up).
    static ANALYZER: std::rc::Rc<Analyzer> = std::rc::Rc::new(Analyzer::new());
}

/// This thread's [`Analyzer`] (a fresh one while the thread exits).
pub fn thread_analyzer() -> std::rc::Rc<Analyzer> {
    ANALYZER
        .try_with(std::rc::Rc::clone)
        .unwrap_or_else(|_| std::rc::Rc::new(Analyzer::new()))
}

/// BM25 term-frequency saturation.
pub const BM25_K1: f64 = 1.2;
/// BM25 length normalization.
pub const BM25_B: f64 = 0.75;
/// Weight of a word's stem term relative to its exact term. A document holding the query's
/// exact word matches both (1 + 32), one holding another inflection only the stem (32): the
/// exact form still ranks first among otherwise equal documents, but an inflection is not
/// outweighed by documents that happen to hold the query's form verbatim. Chosen on the
/// known-item queries of `benches/compare/text` (980,011 documents, success@10 of
/// exact-word / inflected / identifier queries): 0.643 / 0.590 / 0.725 at weight 8, 0.640 /
/// 0.598 / 0.729 at 32 (FTS5: 0.644 / 0.617 / 0.489); at 100,000 documents 0.612 / 0.571 /
/// 0.827 at 8, 0.608 / 0.581 / 0.854 at 32 (FTS5 0.590 / 0.576 / 0.504).
pub const STEM_WEIGHT: f64 = 32.0;
/// Weight of a whole identifier's stem, the stem of its joined form (`workerPoolSpecs`,
/// `worker_pool_specs` and `worker-pool-specs` → `~workerpoolspec`): a word's, since every
/// naming convention of the name shares it. Its parts then weigh [`PART_WEIGHT`].
/// Identifier queries of `benches/compare/text` (980,011 documents, success@10 strict /
/// dup-aware, parts at 0.25): 0.747 / 0.849 at 1, 0.761 / 0.860 at 32, 0.743 / 0.845 at
/// 64 (the other query families unchanged).
pub const WHOLE_STEM_WEIGHT: f64 = STEM_WEIGHT;
/// Weight of each term of a part of a query identifier indexed whole by its stem
/// (`worker`, `pool` and `specs` of `workerPoolSpecs`), relative to a word's: the name
/// itself is the evidence, its parts are weaker evidence (a text about "worker pools"
/// still matches). Light parts also cost less: a query's rare words and the name lift the
/// threshold above what the parts' common words can add sooner, so their long lists are
/// sought, not walked. Identifier queries of `benches/compare/text` (980,011 documents,
/// success@10 strict / dup-aware, whole stem at 32): 0.758 / 0.857 at 0.1, 0.761 / 0.860
/// at 0.25, 0.760 / 0.860 at 0.5, 0.756 / 0.859 at 1.
pub const PART_WEIGHT: f64 = 0.25;
/// Score factor of a document that matches every (non-stop) query word.
pub const ALL_WORDS_BOOST: f64 = 1.2;
/// Further factor of a document holding the query's words consecutively in one field.
pub const PHRASE_BOOST: f64 = 1.25;
/// Longest query in bytes.
pub const QUERY_BYTES_MAX: usize = 4096;
/// Most terms a query scores (the rest are ignored).
pub const QUERY_TERMS_MAX: usize = 64;
/// Largest `limit`.
pub const TEXT_LIMIT_MAX: usize = 10_000;
/// Largest `offset`.
pub const TEXT_OFFSET_MAX: usize = 100_000;
/// Longest snippet, in characters.
pub const SNIPPET_CHARS_MAX: usize = 200;
/// Characters of context a snippet shows before its first match.
const SNIPPET_LEAD_CHARS: usize = 60;

/// An indexed field of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TextField {
    /// `NodeProps::title`.
    Title,
    /// `NodeProps::content`.
    Content,
    /// The top-level string and array-of-strings values of `NodeProps::props` (e.g. AIM
    /// `observations`), in key order.
    Props,
}

impl TextField {
    /// Every field, in index order.
    pub const ALL: [TextField; TEXT_FIELDS] =
        [TextField::Title, TextField::Content, TextField::Props];

    /// The field's index in per-field arrays.
    pub fn index(self) -> usize {
        match self {
            TextField::Title => 0,
            TextField::Content => 1,
            TextField::Props => 2,
        }
    }

    /// The field's name: `title`, `content` or `props`.
    pub fn name(self) -> &'static str {
        match self {
            TextField::Title => "title",
            TextField::Content => "content",
            TextField::Props => "props",
        }
    }
}

/// The texts of a node's indexed fields.
pub fn field_texts(node: &Node) -> [Cow<'_, str>; TEXT_FIELDS] {
    let mut props = String::new();
    for v in node.props.props.values() {
        let mut push = |s: &str| {
            if !props.is_empty() {
                props.push('\n');
            }
            props.push_str(s);
        };
        match v {
            serde_json::Value::String(s) => push(s),
            serde_json::Value::Array(a) => a.iter().filter_map(|x| x.as_str()).for_each(push),
            _ => {}
        }
    }
    [
        Cow::Borrowed(node.props.title.as_str()),
        Cow::Borrowed(node.props.content.as_str()),
        Cow::Owned(props),
    ]
}

/// A node's index entry: per-field lengths (tokens) and per-term, per-field frequencies.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DocTerms {
    /// Tokens per field.
    pub lens: [u32; TEXT_FIELDS],
    /// Terms (namespaced) with their frequencies per field, sorted by term.
    pub terms: Vec<(Vec<u8>, [u32; TEXT_FIELDS])>,
    /// The [`pair_hash`]es of the units that follow each other in its fields (sorted,
    /// each once): its phrase-pair filter ([`PairFilter`]) and its part of its segment's
    /// phrase-pair set.
    pub pairs: Vec<u32>,
}

/// Analyzes a node's fields into its index entry.
pub fn doc_terms(analyzer: &Analyzer, node: &Node) -> DocTerms {
    let mut counts = TermCounts::default();
    counts.count(analyzer, node);
    let mut terms: Vec<_> = counts
        .terms()
        .map(|(term, tf)| (term.to_vec(), tf))
        .collect();
    terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    DocTerms {
        lens: counts.lens,
        terms,
        pairs: std::mem::take(&mut counts.pairs),
    }
}

/// One document's index entry as analysis counts it, in buffers reused from document to
/// document: its distinct terms back to back in the order they first occur, each with
/// its per-field frequencies, and the per-field lengths. [`doc_terms`] sorted; a bulk
/// load's analysis threads keep one each, so that counting allocates nothing per term.
#[derive(Default)]
pub struct TermCounts {
    /// Indices into `ends` / `tfs`, hashed by the term's bytes.
    table: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    /// The distinct terms' bytes, back to back.
    bytes: Vec<u8>,
    /// Per distinct term, its end in `bytes`.
    ends: Vec<u32>,
    /// Per distinct term, its frequency per field.
    tfs: Vec<[u32; TEXT_FIELDS]>,
    /// Per distinct term, the index of its stem term once known (exact terms only).
    stems: Vec<Option<usize>>,
    /// Tokens per field (a token's exact form counts once).
    pub lens: [u32; TEXT_FIELDS],
    /// The [`pair_hash`]es of every two units that follow each other in a field (sorted,
    /// each once; see [`DocTerms::pairs`]).
    pub pairs: Vec<u32>,
}

impl std::fmt::Debug for TermCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TermCounts")
            .field("terms", &self.ends.len())
            .field("lens", &self.lens)
            .finish()
    }
}

/// Distinct term `i` of a [`TermCounts`]' `bytes` and `ends`.
fn term_bytes<'b>(bytes: &'b [u8], ends: &[u32], i: u32) -> &'b [u8] {
    let i = i as usize;
    let start = i
        .checked_sub(1)
        .and_then(|p| ends.get(p))
        .map_or(0, |&e| e as usize);
    let end = ends.get(i).map_or(start, |&e| e as usize);
    bytes.get(start..end).unwrap_or(&[])
}

/// A [`TermCounts`] whose table grew past this many slots (a huge document) starts the
/// next document with a new one, so that clearing stays proportional to a document.
const TERM_COUNTS_SLOTS_KEPT: usize = 1 << 14;

impl TermCounts {
    /// Counts `node`'s terms, replacing what was counted before.
    pub fn count(&mut self, analyzer: &Analyzer, node: &Node) {
        if self.table.capacity() > TERM_COUNTS_SLOTS_KEPT {
            self.table = hashbrown::HashTable::new();
        } else {
            self.table.clear();
        }
        self.bytes.clear();
        self.ends.clear();
        self.tfs.clear();
        self.stems.clear();
        self.lens = [0; TEXT_FIELDS];
        self.pairs.clear();
        let mut term = Vec::new();
        for (f, text) in field_texts(node).iter().enumerate() {
            let mut n = 0u32;
            // The hash of the field's last unit (a phrase's units: tokens that are not
            // whole identifiers, `phrase::units_hold`).
            let mut prev: Option<u64> = None;
            analyzer.for_each_token(text, |kind, token| {
                // The exact form of each token counts once toward the length.
                n = n.saturating_add(1);
                if kind != TermKind::Whole {
                    let h = unit_hash(token);
                    if let Some(p) = prev {
                        self.pairs.push(pair_hash(p, h));
                    }
                    prev = Some(h);
                }
                term.clear();
                term.push(analyze::EXACT);
                term.extend_from_slice(token.as_bytes());
                let exact = self.find_or_insert(&term);
                // A token met before in this document has its stem term known (the stem
                // depends on the text alone): no stemming, no second look-up.
                let stem = analyze::is_stemmed(kind, token).then(|| {
                    self.stems.get(exact).copied().flatten().unwrap_or_else(|| {
                        term.clear();
                        analyzer.push_stem_term(&analyze::stem_source(kind, token), &mut term);
                        self.find_or_insert(&term)
                    })
                });
                if let Some(stem) = stem {
                    if let Some(slot) = self.stems.get_mut(exact) {
                        *slot = Some(stem);
                    }
                    if let Some(tf) = self.tfs.get_mut(stem) {
                        tf[f] = tf[f].saturating_add(1);
                    }
                }
                // `find_or_insert` answers indices of `tfs`.
                if let Some(tf) = self.tfs.get_mut(exact) {
                    tf[f] = tf[f].saturating_add(1);
                }
            });
            self.lens[f] = n;
        }
        self.pairs.sort_unstable();
        self.pairs.dedup();
    }

    /// The index of `term` among the distinct terms, added (with zero counts) if new.
    fn find_or_insert(&mut self, term: &[u8]) -> usize {
        let TermCounts {
            table,
            hasher,
            bytes,
            ends,
            tfs,
            stems,
            ..
        } = self;
        let hash = hasher.hash_one(term);
        if let Some(&i) = table.find(hash, |&i| term_bytes(bytes, ends, i) == term) {
            return i as usize;
        }
        // Terms are at most TERM_BYTES_MAX + 1 bytes and a node's text a few MB (record
        // limits): both counts fit u32.
        let i = u32::try_from(ends.len()).unwrap_or(u32::MAX);
        bytes.extend_from_slice(term);
        ends.push(u32::try_from(bytes.len()).unwrap_or(u32::MAX));
        tfs.push([0; TEXT_FIELDS]);
        stems.push(None);
        table.insert_unique(hash, i, |&j| hasher.hash_one(term_bytes(bytes, ends, j)));
        i as usize
    }

    /// The distinct terms' bytes back to back (see [`TermCounts::ends`]).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Per distinct term in first-occurrence order: its end in [`TermCounts::bytes`] and
    /// its frequency per field.
    pub fn ends(&self) -> impl Iterator<Item = (u32, [u32; TEXT_FIELDS])> + '_ {
        self.ends.iter().copied().zip(self.tfs.iter().copied())
    }

    /// The distinct terms with their frequencies per field, in first-occurrence order.
    pub fn terms(&self) -> impl Iterator<Item = (&[u8], [u32; TEXT_FIELDS])> + '_ {
        let mut start = 0usize;
        self.ends().map(move |(end, tf)| {
            let term = self.bytes.get(start..end as usize).unwrap_or(&[]);
            start = end as usize;
            (term, tf)
        })
    }
}

/// A text search request: the query and how to rank and cut the answer.
#[derive(Clone, Debug, PartialEq)]
pub struct TextQuery {
    pub(crate) query: String,
    pub(crate) limit: usize,
    pub(crate) offset: usize,
    pub(crate) filter: NodeFilter,
    pub(crate) weights: [f64; TEXT_FIELDS],
    pub(crate) snippets: bool,
}

impl TextQuery {
    /// A query for `text`: the 10 best hits with snippets, no filter, field weights title
    /// 2, content 1, props 1.
    pub fn new(text: impl Into<String>) -> TextQuery {
        TextQuery {
            query: text.into(),
            limit: 10,
            offset: 0,
            filter: NodeFilter::default(),
            weights: [2.0, 1.0, 1.0],
            snippets: true,
        }
    }

    /// Whether each hit carries a snippet of its best field (default `true`). Without,
    /// [`TextHit::snippet`] is empty and the hits' texts are not read for it (finding a
    /// snippet's first match is about a sixth of a typical query's time): for callers
    /// that show no text, or that show it for only some of the hits.
    #[must_use]
    pub fn snippets(mut self, snippets: bool) -> TextQuery {
        self.snippets = snippets;
        self
    }

    /// At most `limit` hits (1..=[`TEXT_LIMIT_MAX`]).
    #[must_use]
    pub fn limit(mut self, limit: usize) -> TextQuery {
        self.limit = limit;
        self
    }

    /// Skips the `offset` best hits (at most [`TEXT_OFFSET_MAX`]).
    #[must_use]
    pub fn offset(mut self, offset: usize) -> TextQuery {
        self.offset = offset;
        self
    }

    /// Only nodes `filter` accepts; applied during the search, so `limit` hits come back
    /// whenever that many matching nodes exist.
    #[must_use]
    pub fn filter(mut self, filter: NodeFilter) -> TextQuery {
        self.filter = filter;
        self
    }

    /// Per-field weights (finite, ≥ 0).
    #[must_use]
    pub fn field_weights(mut self, title: f64, content: f64, props: f64) -> TextQuery {
        self.weights = [title, content, props];
        self
    }

    /// The query text.
    pub fn text(&self) -> &str {
        &self.query
    }
}

/// One hit of a text search.
#[derive(Clone, Debug, PartialEq)]
pub struct TextHit {
    /// The node.
    pub node: NodeId,
    /// Its score (higher is better; comparable within one search only).
    pub score: f64,
    /// The field that contributed most to the score.
    pub field: TextField,
    /// Up to 200 characters ([`SNIPPET_CHARS_MAX`](crate::limits::TEXT_SNIPPET_CHARS_MAX)) of that field around its first match;
    /// empty when the query asked for none ([`TextQuery::snippets`]).
    pub snippet: String,
}

/// One term a query scores.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryTerm {
    /// The namespaced term.
    pub term: Vec<u8>,
    /// Exact 1, stem [`STEM_WEIGHT`] (a whole identifier's stem [`WHOLE_STEM_WEIGHT`]).
    pub weight: f64,
    /// The query word it stands for (for the all-words boost); `None` for whole
    /// identifiers.
    pub word: Option<usize>,
    /// The index of a query term that every document holding this one holds too, in the
    /// same fields (an exact word's stem term, see [`analyze::stem_implied`]): where that
    /// term is absent, this one is.
    pub requires: Option<usize>,
}

/// A parsed query.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParsedQuery {
    /// Terms to score; empty when the query holds only stop words and punctuation.
    pub terms: Vec<QueryTerm>,
    /// Number of distinct significant words (≤ 64).
    pub words: usize,
    /// Exact forms of the significant words (for snippets).
    pub word_texts: Vec<String>,
    /// The query's word and bigram sequence, stop words included (the phrase).
    pub phrase: Vec<String>,
}

impl ParsedQuery {
    /// The bits a document's [`PairFilter`] holds when one of its fields holds the
    /// phrase: those of each two consecutive units of the phrase (none for a phrase of
    /// fewer than two).
    pub fn phrase_pairs(&self) -> PairFilter {
        pair_filter_of(&self.phrase_pair_hashes())
    }

    /// The [`pair_hash`]es of each two consecutive units of the phrase: a segment whose
    /// phrase-pair set lacks one holds the phrase nowhere.
    pub fn phrase_pair_hashes(&self) -> Vec<u32> {
        self.phrase
            .windows(2)
            .map(|w| pair_hash(unit_hash(&w[0]), unit_hash(&w[1])))
            .collect()
    }

    /// Parses `text` (checked against the limits of [`TextQuery`]).
    ///
    /// # Errors
    /// `InvalidArgument` for an empty or whitespace-only query, or one over
    /// [`QUERY_BYTES_MAX`] bytes.
    pub fn parse(analyzer: &Analyzer, text: &str) -> Result<ParsedQuery> {
        if text.len() > QUERY_BYTES_MAX {
            return Err(Error::invalid(format!(
                "text query is {} bytes, the limit is {QUERY_BYTES_MAX}",
                text.len()
            )));
        }
        if text.trim().is_empty() {
            return Err(Error::invalid("text query is empty"));
        }
        let tokens = analyzer.tokens(text);
        let mut q = ParsedQuery::default();
        // Adds a term, once: a term met again keeps the greater weight (a part's stem,
        // `name` of `userName`, that a later word, `names`, shares, weighs a word's).
        let push = |q: &mut ParsedQuery, term: Vec<u8>, weight: f64, word: Option<usize>| {
            if let Some(t) = q.terms.iter_mut().find(|t| t.term == term) {
                t.weight = t.weight.max(weight);
            } else if q.terms.len() < QUERY_TERMS_MAX {
                q.terms.push(QueryTerm {
                    term,
                    weight,
                    word,
                    requires: None,
                });
            }
        };
        // Which tokens are parts of a name indexed whole by its stem (a whole token comes
        // right before its parts, which start before it ends). A part weighs
        // PART_WEIGHT of a word, unless the query also holds it as a word on its own.
        let mut parts_end = 0usize;
        let is_part: Vec<bool> = tokens
            .iter()
            .map(|t| {
                if t.kind == TermKind::Whole && t.is_stemmed() {
                    parts_end = parts_end.max(t.end);
                }
                t.kind == TermKind::Word && t.start < parts_end
            })
            .collect();
        let alone: Vec<&str> = tokens
            .iter()
            .zip(&is_part)
            .filter(|(t, part)| t.kind == TermKind::Word && !**part)
            .map(|(t, _)| t.text.as_str())
            .collect();
        for (t, &part) in tokens.iter().zip(&is_part) {
            let scale = if part && !alone.contains(&t.text.as_str()) {
                PART_WEIGHT
            } else {
                1.0
            };
            match t.kind {
                TermKind::Word | TermKind::Bigram => {
                    q.phrase.push(t.text.clone());
                    if analyze::is_stop_word(&t.text)
                        || q.word_texts.contains(&t.text)
                        || q.words >= 63
                    {
                        continue;
                    }
                    let w = q.words;
                    q.words += 1;
                    q.word_texts.push(t.text.clone());
                    let exact_at = q.terms.len();
                    push(&mut q, t.exact_term(), scale, Some(w));
                    // The exact term's index when this word added it.
                    let exact_at = (q.terms.len() > exact_at).then_some(exact_at);
                    if t.is_stemmed() {
                        let stem = analyzer.stem(&t.text);
                        let stem_term = analyze::term(analyze::STEM, &stem);
                        push(&mut q, stem_term.clone(), STEM_WEIGHT * scale, Some(w));
                        if analyze::stem_implied(&t.text)
                            && let Some(r) = q.terms.iter().position(|x| x.term == stem_term)
                            && let Some(exact) = exact_at.and_then(|e| q.terms.get_mut(e))
                        {
                            exact.requires = Some(r);
                        }
                        // Where the stemmer keeps a word's singular and plural apart
                        // (`mpis` / `mpi`, `focu` / `focus`), the other one's stem too.
                        if let Some(other) = analyze::other_number(&t.text) {
                            let other = analyzer.stem(&other);
                            if other != stem {
                                push(
                                    &mut q,
                                    analyze::term(analyze::STEM, &other),
                                    STEM_WEIGHT * scale,
                                    Some(w),
                                );
                            }
                        }
                    }
                }
                TermKind::Whole => {
                    push(&mut q, t.exact_term(), 1.0, None);
                    if t.is_stemmed() {
                        let joined = analyze::stem_source(t.kind, &t.text);
                        let stem = analyze::term(analyze::STEM, &analyzer.stem(&joined));
                        push(&mut q, stem, WHOLE_STEM_WEIGHT, None);
                    }
                }
            }
        }
        Ok(q)
    }
}

/// BM25 inverse document frequency of a term found in `df` of `docs` documents.
pub fn idf(docs: u64, df: u64) -> f64 {
    let (n, df) = (docs as f64, df as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln().max(0.0)
}

/// The contribution of one term (`weight_idf` = its weight × idf) to a document with
/// per-field frequencies `tf` and lengths `lens`, split by field.
pub fn term_fields(
    weight_idf: f64,
    weights: &[f64; TEXT_FIELDS],
    tf: &[u32; TEXT_FIELDS],
    lens: &[u32; TEXT_FIELDS],
    avg: &[f64; TEXT_FIELDS],
) -> [f64; TEXT_FIELDS] {
    term_fields_scaled(weight_idf, tf, &tf_scale(weights, lens, avg))
}

/// [`term_fields`] with the document's [`tf_scale`] computed already: a search computes
/// it once per document and shares it among the query's terms. Every scoring path goes
/// through here, so a document's score is the same bits whichever path computed it.
pub fn term_fields_scaled(
    weight_idf: f64,
    tf: &[u32; TEXT_FIELDS],
    scale: &[f64; TEXT_FIELDS],
) -> [f64; TEXT_FIELDS] {
    let mut out = [0.0; TEXT_FIELDS];
    let mut x = [0.0; TEXT_FIELDS];
    let mut total = 0.0;
    for f in 0..TEXT_FIELDS {
        // A scale is finite (a length norm is at least 1 - b), so a field without the
        // term adds exactly 0.
        x[f] = f64::from(tf[f]) * scale[f];
        total += x[f];
    }
    if total > 0.0 {
        let per = weight_idf * saturate(total) / total;
        for f in 0..TEXT_FIELDS {
            out[f] = x[f] * per;
        }
    }
    out
}

/// BM25's length normalization of a field of `len` tokens, `avg_len` on average.
fn length_norm(len: u32, avg_len: f64) -> f64 {
    let avg = if avg_len > 0.0 { avg_len } else { 1.0 };
    1.0 - BM25_B + BM25_B * f64::from(len) / avg
}

/// BM25's saturation of a (weighted, normalized) term frequency.
fn saturate(tf: f64) -> f64 {
    tf * (BM25_K1 + 1.0) / (tf + BM25_K1)
}

/// The most a term (`weight_idf` = its weight × idf) adds to the score of a document whose
/// postings `meta` bounds (tf at most `tf_max`, length at least `len_min`, per field): the
/// score grows with tf and shrinks with length.
pub fn term_bound(
    weight_idf: f64,
    weights: &[f64; TEXT_FIELDS],
    meta: &crate::format::text::BlockMeta,
    avg: &[f64; TEXT_FIELDS],
) -> f64 {
    let mut total = 0.0;
    for f in 0..TEXT_FIELDS {
        if meta.tf_max[f] == 0 || weights[f] == 0.0 {
            continue;
        }
        if meta.tf_max[f] == u8::MAX {
            // "255 or more": the limit for tf → ∞.
            return weight_idf * (BM25_K1 + 1.0);
        }
        total += weights[f] * f64::from(meta.tf_max[f])
            / length_norm(u32::from(meta.len_min[f]), avg[f]);
    }
    weight_idf * saturate(total)
}

/// Per field, `weights[f]` over BM25's length norm at length `lens[f]`: what a tf is
/// multiplied by — at a document's lengths for its exact score ([`term_fields_scaled`],
/// once per document), at a postings block's least lengths for [`term_tf_bound`] (once
/// per block).
pub fn tf_scale(
    weights: &[f64; TEXT_FIELDS],
    lens: &[u32; TEXT_FIELDS],
    avg: &[f64; TEXT_FIELDS],
) -> [f64; TEXT_FIELDS] {
    let mut out = [0.0; TEXT_FIELDS];
    for f in 0..TEXT_FIELDS {
        out[f] = weights[f] / length_norm(lens[f], avg[f]);
    }
    out
}

/// The most a term (`weight_idf` = its weight × idf) adds to the score of a document
/// holding it `tf` times per field, in fields at least as long as the lengths `scale` was
/// computed for ([`tf_scale`]): [`term_fields`]' sum with each length at its least (the
/// score shrinks with length). Multiplying by a reciprocal can round differently from the
/// exact score's division: callers compare bounds with a relative slack of 1e-9.
pub fn term_tf_bound(weight_idf: f64, tf: &[u32; TEXT_FIELDS], scale: &[f64; TEXT_FIELDS]) -> f64 {
    let mut total = 0.0;
    for f in 0..TEXT_FIELDS {
        total += f64::from(tf[f]) * scale[f];
    }
    if total > 0.0 {
        weight_idf * saturate(total)
    } else {
        0.0
    }
}

/// Accumulated score of one candidate document.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Accumulator {
    /// Score per field.
    pub fields: [f64; TEXT_FIELDS],
    /// Bit `w`: query word `w` matched.
    pub words: u64,
    /// Per field, bit `w`: query word `w` occurs in the field in its exact form (a field
    /// can hold the query's phrase only when it holds every word exactly).
    pub exact_fields: [u64; TEXT_FIELDS],
}

impl Accumulator {
    /// Adds one term's postings entry for this document.
    pub fn add(
        &mut self,
        term: &QueryTerm,
        idf: f64,
        weights: &[f64; TEXT_FIELDS],
        tf: &[u32; TEXT_FIELDS],
        lens: &[u32; TEXT_FIELDS],
        avg: &[f64; TEXT_FIELDS],
    ) {
        self.add_parts(
            term,
            term_fields(term.weight * idf, weights, tf, lens, avg),
            tf,
        );
    }

    /// Adds `term`'s per-field parts (its [`term_fields`] at this document) and its words;
    /// `tf` is its frequency per field here.
    pub fn add_parts(
        &mut self,
        term: &QueryTerm,
        parts: [f64; TEXT_FIELDS],
        tf: &[u32; TEXT_FIELDS],
    ) {
        for (field, part) in self.fields.iter_mut().zip(parts) {
            *field += part;
        }
        if let Some(w) = term.word {
            self.words |= 1 << w;
            if term.term.first() == Some(&analyze::EXACT) {
                for (mask, &tf) in self.exact_fields.iter_mut().zip(tf) {
                    if tf > 0 {
                        *mask |= 1 << w;
                    }
                }
            }
        }
    }

    /// Which fields hold every one of the query's `words` significant words exactly: only
    /// those can hold its phrase.
    pub fn phrase_fields(&self, words: usize) -> [bool; TEXT_FIELDS] {
        let all = if words >= 64 {
            u64::MAX
        } else {
            (1u64 << words) - 1
        };
        self.exact_fields.map(|m| m & all == all)
    }

    /// The score before the phrase bonus.
    pub fn base(&self, words: usize) -> f64 {
        let sum: f64 = self.fields.iter().sum();
        if words >= 2 && self.words.count_ones() as usize == words {
            sum * ALL_WORDS_BOOST
        } else {
            sum
        }
    }

    /// The field contributing most (the first on ties).
    pub fn best_field(&self) -> TextField {
        let mut best = 0;
        for f in 1..TEXT_FIELDS {
            if self.fields[f] > self.fields[best] {
                best = f;
            }
        }
        TextField::ALL[best]
    }
}

/// Up to [`SNIPPET_CHARS_MAX`] characters of `text` starting a little before the first
/// token that matches a query word exactly or by stem (the start of `text` when none).
///
/// A long text is not analysed up to the match: only the chunks holding an occurrence
/// (ASCII case folded) of a query word's stem less its last letter are — every token
/// sharing that stem holds those letters, the English stemmer changing at most the last
/// letter of what it keeps (happy → happi) — save a few irregular forms (dying → die), for
/// which a later match, or the text's start, may be shown. For a query word whose stem is
/// short or not ASCII the text is analysed from its start.
pub fn snippet(analyzer: &Analyzer, text: &str, query: &ParsedQuery) -> String {
    let stems: Vec<String> = query.word_texts.iter().map(|w| analyzer.stem(w)).collect();
    // The English stemmer changes a word's end only (and drops a leading apostrophe), so a
    // token can share a stem only with a stem starting with its first character: the
    // others need no stemming.
    let firsts: Vec<Option<char>> = stems.iter().map(|s| s.chars().next()).collect();
    let is_match = |t: &Token| {
        t.kind != TermKind::Whole
            && (query.word_texts.contains(&t.text) || {
                let first = t.text.chars().next();
                (first == Some('\'') || firsts.contains(&first))
                    && stems.contains(&analyzer.stem(&t.text))
            })
    };
    let found = match snippet_patterns(&query.word_texts, &stems) {
        Some(patterns) => {
            let lower = text.to_ascii_lowercase();
            // Per pattern: not searched yet (None), or its next occurrence at or after the
            // position last asked for (Some(None): no more).
            let mut next: Vec<Option<Option<usize>>> = vec![None; patterns.len()];
            let hint = |pos: usize| {
                let mut best: Option<usize> = None;
                for (p, n) in patterns.iter().zip(next.iter_mut()) {
                    let stale = match *n {
                        None => true,
                        Some(Some(at)) => at < pos,
                        Some(None) => false,
                    };
                    if stale {
                        *n = Some(
                            lower
                                .get(pos..)
                                .and_then(|r| r.find(p.as_str()))
                                .map(|i| pos + i),
                        );
                    }
                    if let Some(Some(at)) = *n {
                        best = Some(best.map_or(at, |b: usize| b.min(at)));
                    }
                }
                best
            };
            analyzer.find_token_hinted(text, hint, is_match)
        }
        None => analyzer.find_token(text, is_match),
    };
    let at = found.map_or(0, |t| t.start);
    // Back off a few characters (on char boundaries) for context.
    let lead: usize = text[..at]
        .chars()
        .rev()
        .take(SNIPPET_LEAD_CHARS)
        .map(char::len_utf8)
        .sum();
    let start = at - lead;
    let rest = &text[start..];
    let end = rest
        .char_indices()
        .nth(SNIPPET_CHARS_MAX)
        .map_or(rest.len(), |(i, _)| i);
    rest[..end].trim().to_owned()
}

/// What [`snippet`] searches a text for: per query word, its stem less the last letter
/// (which the word holds too). `None` when a stem is under four letters, not ASCII, or not
/// so held (an irregular form): the text is then analysed from its start.
fn snippet_patterns(words: &[String], stems: &[String]) -> Option<Vec<String>> {
    let mut out = Vec::with_capacity(words.len());
    for (w, s) in words.iter().zip(stems) {
        if !w.is_ascii() || !s.is_ascii() || s.len() < 4 {
            return None;
        }
        let prefix = &s[..s.len() - 1];
        if !w.starts_with(prefix) {
            return None;
        }
        out.push(prefix.to_owned());
    }
    Some(out)
}

/// Checks a query's limits.
///
/// # Errors
/// `InvalidArgument` naming the limit.
pub(crate) fn check_query(q: &TextQuery) -> Result<()> {
    if q.limit == 0 || q.limit > TEXT_LIMIT_MAX {
        return Err(Error::invalid(format!(
            "text search limit {} is outside 1..={TEXT_LIMIT_MAX}",
            q.limit
        )));
    }
    if q.offset > TEXT_OFFSET_MAX {
        return Err(Error::invalid(format!(
            "text search offset {} exceeds {TEXT_OFFSET_MAX}",
            q.offset
        )));
    }
    if q.weights.iter().any(|w| !w.is_finite() || *w < 0.0) {
        return Err(Error::invalid("text field weights must be finite and >= 0"));
    }
    Ok(())
}

#[cfg(test)]
mod rank_tests;
#[cfg(test)]
mod tests;
