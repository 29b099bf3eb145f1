//! The ranking kernel without `db`: an in-memory [`TextSource`] (segments encoded by the
//! format's writer, a delta of documents, deletes) ranked by [`search_with`] and by a
//! brute-force BM25F written here from DESIGN.md §13, over the same documents.
//!
//! The brute force scores every live node's newest version; collection statistics count
//! every version (superseded and deleted ones in segments included), as the kernel's do.
//! Scores are compared with a relative tolerance (the brute force sums in its own order),
//! so at equal scores the ids are compared as sets: hit `r` of the kernel must carry the
//! brute force's `offset + r`-th best score, be a distinct node, and its own score must be
//! that node's brute-force score. The kernel's tie order (higher score, then shorter
//! document, then lower node id) is checked on its own scores.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::format::codec::DecodeError;
use crate::format::record::RecordTexts;
use crate::format::text::{FieldLens, TextIndexView, TextIndexWriter};
use crate::model::NodeProps;

/// Words of the generated texts, rare first (a word's index is drawn skewed toward the
/// end): inflections share stems, and stop words make phrases.
const VOCAB: [&str; 25] = [
    // One name in three conventions (a joined stem; parts that weigh less in a query).
    "deploy_server",
    "deployServer",
    "crash-pool",
    "rollback",
    "pgbouncer",
    // Non-ASCII text (the phrase pre-check's other path) and case.
    "pool—Cache",
    "Server’s",
    "crashed",
    "deploying",
    "servers",
    "caches",
    "pooling",
    "deployed",
    "crash",
    "server",
    "cache",
    "pool",
    "deploys",
    "of",
    "a",
    "index",
    "deploy",
    "the",
    "incident",
    "alpha",
];

/// One version of a node's texts: word indices of title, content and a `note` property.
type Texts = (Vec<usize>, Vec<usize>, Vec<usize>);

fn sentence(words: &[usize]) -> String {
    words
        .iter()
        .map(|&w| VOCAB[w % VOCAB.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

fn node(id: u32, (title, content, note): &Texts) -> Arc<Node> {
    let mut props = crate::model::Props::new();
    if !note.is_empty() {
        props.insert("note".into(), sentence(note).into());
    }
    Arc::new(Node {
        id: NodeId(id),
        key: format!("k{id}"),
        props: NodeProps {
            kind: if id.is_multiple_of(2) { "even" } else { "odd" }.into(),
            title: sentence(title),
            content: sentence(content),
            props,
            ..NodeProps::default()
        },
        created_at: 0,
        updated_at: 0,
        valid_from: 0,
        valid_to: None,
    })
}

/// A segment's text sections, encoded by the format's writer, and its records.
struct MemSegment {
    stats: Vec<u8>,
    terms: Vec<u8>,
    postings: Vec<u8>,
    lens: Vec<u16>,
    /// The records' phrase-pair filters (what the walk reads before a phrase check).
    pairs: Vec<u64>,
    /// The segment's phrase-pair set (what tells a search that no record holds the
    /// phrase).
    pair_set: Vec<u64>,
    /// Node ids of the records, increasing.
    node_ids: Vec<u32>,
    /// The records.
    nodes: BTreeMap<u32, Arc<Node>>,
}

impl MemSegment {
    fn new(nodes: BTreeMap<u32, Arc<Node>>) -> MemSegment {
        let analyzer = Analyzer::new();
        let mut w = TextIndexWriter::default();
        for n in nodes.values() {
            let d = doc_terms(&analyzer, n);
            w.add_doc(n.id.0, d.lens, &d.pairs, d.terms);
        }
        let node_ids: Vec<u32> = nodes.keys().copied().collect();
        let s = w.finish(&node_ids).expect("sections");
        MemSegment {
            stats: s.stats,
            terms: s.terms,
            postings: s.postings,
            lens: s.doc_lens,
            pairs: s.pairs,
            pair_set: s.pair_set,
            node_ids,
            nodes,
        }
    }
}

/// A store in memory: segments oldest first, a delta of live nodes, deleted nodes.
struct MemSource {
    segments: Vec<MemSegment>,
    /// node → (record, its index entry).
    delta: BTreeMap<u32, (Arc<Node>, DocTerms)>,
    deleted: BTreeSet<u32>,
}

impl MemSource {
    fn new(segments: &[Vec<(u32, Texts)>], delta: &[(u32, Texts)], deleted: &[u32]) -> MemSource {
        let analyzer = Analyzer::new();
        let deleted: BTreeSet<u32> = deleted.iter().copied().collect();
        let segments = segments
            .iter()
            .map(|s| MemSegment::new(s.iter().map(|(id, t)| (*id, node(*id, t))).collect()))
            .collect();
        let delta = delta
            .iter()
            .filter(|(id, _)| !deleted.contains(id))
            .map(|(id, t)| {
                let n = node(*id, t);
                let d = doc_terms(&analyzer, &n);
                (*id, (n, d))
            })
            .collect();
        MemSource {
            segments,
            delta,
            deleted,
        }
    }

    /// The newest version of every live node, with the segment holding it (`None`: the
    /// delta).
    fn live(&self) -> BTreeMap<u32, (Arc<Node>, Option<usize>)> {
        let mut out = BTreeMap::new();
        for (s, seg) in self.segments.iter().enumerate() {
            for (&id, n) in &seg.nodes {
                out.insert(id, (n.clone(), Some(s)));
            }
        }
        for (&id, (n, _)) in &self.delta {
            out.insert(id, (n.clone(), None));
        }
        out.retain(|id, _| !self.deleted.contains(id));
        out
    }

    /// Every indexed version (segments' and the delta's): what collection statistics
    /// count.
    fn versions(&self) -> Vec<Arc<Node>> {
        let mut out: Vec<Arc<Node>> = self
            .segments
            .iter()
            .flat_map(|s| s.nodes.values().cloned())
            .collect();
        out.extend(self.delta.values().map(|(n, _)| n.clone()));
        out
    }
}

impl TextSource for MemSource {
    fn segments(&self) -> usize {
        self.segments.len()
    }

    fn segment_index(&self, segment: usize) -> Result<Option<SegmentIndex<'_>>> {
        let s = &self.segments[segment];
        let view = TextIndexView::parse(
            &s.stats,
            &s.terms,
            &s.postings,
            FieldLens::Narrow(&s.lens),
            s.node_ids.len() as u64,
        )
        .and_then(|v| v.with_pairs(&s.pairs))
        .and_then(|v| v.with_pair_set(&s.pair_set))
        .map_err(|e| self.corrupt(segment, e))?;
        Ok(Some(SegmentIndex {
            view,
            node_ids: &s.node_ids,
            analysis_current: true,
        }))
    }

    fn record_of(&self, segment: usize, node: u32, _hint: &mut usize) -> Option<usize> {
        self.segments[segment].node_ids.binary_search(&node).ok()
    }

    fn is_current(&self, segment: usize, node: u32) -> bool {
        !self.deleted.contains(&node)
            && !self.delta.contains_key(&node)
            && self.segments[segment + 1..]
                .iter()
                .all(|s| !s.nodes.contains_key(&node))
    }

    fn corrupt(&self, segment: usize, e: DecodeError) -> Error {
        Error::corrupt(format!("segment {segment}"), e.offset as u64, e.what)
    }

    fn delta_stats(&self) -> (u64, [u64; TEXT_FIELDS]) {
        let mut totals = [0u64; TEXT_FIELDS];
        for (_, d) in self.delta.values() {
            for (t, &l) in totals.iter_mut().zip(&d.lens) {
                *t += u64::from(l);
            }
        }
        (self.delta.len() as u64, totals)
    }

    fn delta_df(&self, term: &[u8]) -> u64 {
        let mut df = 0;
        self.for_each_delta_posting(term, |_, _, _| df += 1);
        df
    }

    fn for_each_delta_posting(
        &self,
        term: &[u8],
        mut f: impl FnMut(u32, &[u32; TEXT_FIELDS], &[u32; TEXT_FIELDS]),
    ) {
        // A BTreeMap: increasing node order, as the trait asks.
        for (&id, (_, d)) in &self.delta {
            if let Ok(i) = d.terms.binary_search_by(|(t, _)| t.as_slice().cmp(term)) {
                f(id, &d.terms[i].1, &d.lens);
            }
        }
    }

    fn delta_pair_filter(&self, node: u32) -> Option<crate::format::text::PairFilter> {
        self.delta
            .get(&node)
            .map(|(_, d)| crate::format::text::pair_filter_of(&d.pairs))
    }

    fn node(&self, node: u32) -> Result<Option<Arc<Node>>> {
        if self.deleted.contains(&node) {
            return Ok(None);
        }
        if let Some((n, _)) = self.delta.get(&node) {
            return Ok(Some(n.clone()));
        }
        Ok(self
            .segments
            .iter()
            .rev()
            .find_map(|s| s.nodes.get(&node).cloned()))
    }

    /// A segment's record as title and content only, as a store reads them in place.
    fn node_texts(&self, node: u32) -> Result<Option<NodeTexts<'_>>> {
        if self.deleted.contains(&node) {
            return Ok(None);
        }
        if let Some((n, _)) = self.delta.get(&node) {
            return Ok(Some(NodeTexts::Node(n.clone())));
        }
        Ok(self
            .segments
            .iter()
            .rev()
            .find_map(|s| s.nodes.get(&node))
            .map(|n| {
                NodeTexts::Record(RecordTexts {
                    title: &n.props.title,
                    content: &n.props.content,
                })
            }))
    }
}

/// The documents of a [`MemSource`] as the brute force reads them, analysed once.
struct Corpus {
    /// Every indexed version's entry (what collection statistics count).
    versions: Vec<DocTerms>,
    /// Every live node's newest version and its entry.
    live: Vec<(u32, Arc<Node>, DocTerms)>,
}

impl Corpus {
    fn new(source: &MemSource) -> Corpus {
        let analyzer = Analyzer::new();
        Corpus {
            versions: source
                .versions()
                .iter()
                .map(|n| doc_terms(&analyzer, n))
                .collect(),
            live: source
                .live()
                .into_iter()
                .map(|(id, (n, _))| {
                    let d = doc_terms(&analyzer, &n);
                    (id, n, d)
                })
                .collect(),
        }
    }
}

/// BM25F of every live node matching `q`, written from DESIGN.md §13 without the kernel's
/// scoring functions: (score, document length, node), best first.
fn brute_force(corpus: &Corpus, q: &TextQuery) -> Vec<(f64, u64, u32)> {
    let analyzer = Analyzer::new();
    let parsed = ParsedQuery::parse(&analyzer, &q.query).expect("query parses");
    let versions = &corpus.versions;
    let n = versions.len() as f64;
    let avg: Vec<f64> = (0..TEXT_FIELDS)
        .map(|f| {
            let total: f64 = versions.iter().map(|d| f64::from(d.lens[f])).sum();
            if versions.is_empty() { 0.0 } else { total / n }
        })
        .collect();
    let tf_of = |d: &DocTerms, term: &[u8]| -> Option<[u32; TEXT_FIELDS]> {
        d.terms
            .iter()
            .find(|(t, _)| t.as_slice() == term)
            .map(|x| x.1)
    };
    let idfs: Vec<f64> = parsed
        .terms
        .iter()
        .map(|t| {
            let df = versions
                .iter()
                .filter(|d| tf_of(d, &t.term).is_some())
                .count() as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    let mut out = Vec::new();
    for (id, node, d) in &corpus.live {
        if !q.filter.is_empty() && !q.filter.matches(node) {
            continue;
        }
        let (mut score, mut words) = (0.0, BTreeSet::new());
        for (t, idf) in parsed.terms.iter().zip(&idfs) {
            let Some(tf) = tf_of(d, &t.term) else {
                continue;
            };
            let x: f64 = (0..TEXT_FIELDS)
                .map(|f| {
                    let avg = if avg[f] > 0.0 { avg[f] } else { 1.0 };
                    let norm = 1.0 - BM25_B + BM25_B * f64::from(d.lens[f]) / avg;
                    q.weights[f] * f64::from(tf[f]) / norm
                })
                .sum();
            if x > 0.0 {
                score += t.weight * idf * x * (BM25_K1 + 1.0) / (x + BM25_K1);
            }
            words.extend(t.word);
        }
        if words.is_empty() {
            continue;
        }
        if parsed.words >= 2 && words.len() == parsed.words {
            score *= ALL_WORDS_BOOST;
        }
        let phrase = field_texts(node)
            .iter()
            .any(|text| holds_phrase(&analyzer, text, &parsed.phrase));
        if phrase {
            score *= PHRASE_BOOST;
        }
        let len = d.lens.iter().map(|&l| u64::from(l)).sum();
        out.push((score, len, *id));
    }
    out.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    out
}

/// The phrase test as DESIGN.md §13 states it, without the kernel's pre-check and
/// matcher: the text's units (its tokens but whole identifiers) hold the phrase (≥ 2
/// units) as a window.
fn holds_phrase(analyzer: &Analyzer, text: &str, phrase: &[String]) -> bool {
    let tokens = analyzer.tokens(text);
    let units: Vec<&str> = tokens
        .iter()
        .filter(|t| t.kind != TermKind::Whole)
        .map(|t| t.text.as_str())
        .collect();
    phrase.len() >= 2 && units.windows(phrase.len()).any(|w| w == phrase)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The conjunctive pass's limits the oracle runs the walk with besides the searches'
/// own (`None`): the pass whenever the covers exist, never giving way; giving way at
/// its first document found; and after its third (the second pass then skips what the
/// first took).
const LIMITS: [Option<super::maxscore::ConjunctiveLimits>; 4] = {
    use super::maxscore::ConjunctiveLimits as L;
    let always = L {
        postings_min: 0,
        without_share_max: f64::INFINITY,
        check_every: u64::MAX,
        found_share_max: f64::INFINITY,
    };
    [
        None,
        Some(always),
        Some(L {
            check_every: 1,
            found_share_max: 0.0,
            ..always
        }),
        Some(L {
            check_every: 3,
            found_share_max: 0.0,
            ..always
        }),
    ]
};

/// [`check`] under each of [`LIMITS`].
fn check_all_limits(
    source: &MemSource,
    corpus: &Corpus,
    q: &TextQuery,
) -> std::result::Result<(), TestCaseError> {
    for limits in LIMITS {
        super::maxscore::CONJUNCTIVE_FOR_TESTS.set(limits);
        let checked = check(source, corpus, q);
        super::maxscore::CONJUNCTIVE_FOR_TESTS.set(None);
        checked.map_err(|e| TestCaseError::fail(format!("conjunctive limits {limits:?}: {e}")))?;
    }
    Ok(())
}

/// Checks the kernel's answer to `q` over `source` against the brute force.
fn check(
    source: &MemSource,
    corpus: &Corpus,
    q: &TextQuery,
) -> std::result::Result<(), TestCaseError> {
    let got = search_with(source, q, &mut RankScratch::default()).expect("search");
    let want = brute_force(corpus, q);
    let expect_len = want.len().saturating_sub(q.offset).min(q.limit);
    prop_assert_eq!(got.len(), expect_len, "hits of {:?}: {:?}", q.query, got);
    let truth: BTreeMap<u32, (f64, u64)> = want.iter().map(|&(s, l, id)| (id, (s, l))).collect();
    let mut seen = BTreeSet::new();
    for (r, hit) in got.iter().enumerate() {
        let (rank_score, _, _) = want[q.offset + r];
        prop_assert!(seen.insert(hit.node.0), "node {} twice", hit.node.0);
        let Some(&(own, _)) = truth.get(&hit.node.0) else {
            return Err(TestCaseError::fail(format!(
                "hit {} is no match of {:?}",
                hit.node.0, q.query
            )));
        };
        prop_assert!(
            close(hit.score, own),
            "node {}: kernel {} brute force {}",
            hit.node.0,
            hit.score,
            own
        );
        prop_assert!(
            close(hit.score, rank_score),
            "rank {}: kernel's node {} scores {}, the brute force's rank scores {} ({:?})",
            q.offset + r,
            hit.node.0,
            hit.score,
            rank_score,
            &want[..(q.offset + q.limit).min(want.len())]
        );
    }
    // The kernel's tie order on its own scores: higher score, shorter document, lower id.
    for pair in got.windows(2) {
        let key = |h: &TextHit| (truth[&h.node.0].1, h.node.0);
        prop_assert!(
            pair[0].score > pair[1].score
                || (pair[0].score == pair[1].score && key(&pair[0]) < key(&pair[1])),
            "out of order: {:?}",
            pair
        );
    }
    Ok(())
}

/// A word index skewed toward the end of [`VOCAB`] (common words), some rare ones.
fn word() -> impl Strategy<Value = usize> {
    (0..VOCAB.len() * VOCAB.len()).prop_map(|x| x.isqrt())
}

fn texts() -> impl Strategy<Value = Texts> {
    (
        prop::collection::vec(word(), 0..4),
        prop::collection::vec(word(), 0..24),
        prop_oneof![
            3 => Just(Vec::new()),
            1 => prop::collection::vec(word(), 1..6),
        ],
    )
}

const NODES: u32 = 700;

/// A segment: versions of up to `max` nodes.
fn segment(max: usize) -> impl Strategy<Value = Vec<(u32, Texts)>> {
    prop::collection::vec((0..NODES, texts()), 0..max)
}

fn query() -> impl Strategy<Value = TextQuery> {
    (
        prop::collection::vec(word(), 1..4),
        1usize..25,
        0usize..4,
        prop_oneof![3 => Just(false), 1 => Just(true)],
        prop_oneof![3 => Just([2.0, 1.0, 1.0]), 1 => Just([1.0, 3.0, 0.5])],
    )
        .prop_map(|(words, limit, offset, filtered, [t, c, p])| {
            let q = TextQuery::new(sentence(&words))
                .limit(limit)
                .offset(offset)
                .field_weights(t, c, p);
            if filtered {
                q.filter(crate::NodeFilter::any().kinds(["even"]))
            } else {
                q
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The kernel's top hits equal a brute-force BM25F over the same documents: segments
    /// with lists of many blocks (pruned walk, priming, skipping), superseded versions in
    /// older segments, a delta, deletes, filters, offsets and field weights.
    #[test]
    fn top_hits_equal_brute_force_bm25f(
        segments in prop::collection::vec(segment(500), 0..4),
        delta in prop::collection::vec((0..NODES, texts()), 0..40),
        deleted in prop::collection::vec(0..NODES, 0..20),
        queries in prop::collection::vec(query(), 1..6),
    ) {
        let source = MemSource::new(&segments, &delta, &deleted);
        let corpus = Corpus::new(&source);
        for q in &queries {
            check_all_limits(&source, &corpus, q)?;
        }
    }
}

/// One large segment whose common words' lists run to many blocks of 128 postings, with
/// rare words the walk must find among them: the pruned walk's skipping and priming on
/// a store of the size where they matter.
#[test]
fn a_large_segment_ranks_as_the_brute_force() {
    let mut rng = 0x5eed_u64;
    let mut next = |n: usize| {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        // The top bits: well mixed.
        (rng >> 33) as usize % n
    };
    let mut docs = Vec::new();
    for id in 0..3000u32 {
        let mut draw = |k: usize| -> Vec<usize> {
            (0..k)
                .map(|_| (next(VOCAB.len() * VOCAB.len())).isqrt())
                .collect()
        };
        let title = draw(3);
        let content = draw(20);
        docs.push((id, (title, content, Vec::new())));
    }
    let newer: Vec<(u32, Texts)> = docs.iter().step_by(7).cloned().collect();
    let source = MemSource::new(&[docs, newer], &[], &[3, 14, 15]);
    let corpus = Corpus::new(&source);
    super::maxscore::CONJUNCTIVE_OUTCOMES.set((0, 0));
    for text in [
        "rollback",
        "pgbouncer crashed",
        "the deploy of the index",
        "deploying servers cache",
        "incident alpha",
        "alpha the incident",
        "index incident",
        // A name (whole-identifier terms, the conjunctive pass's `either` lists) with
        // words.
        "deployServer crashed pool",
        "crash-pool incident index",
    ] {
        for (limit, offset) in [(1, 0), (10, 0), (10, 5), (200, 0)] {
            let q = TextQuery::new(text).limit(limit).offset(offset);
            if let Err(e) = check_all_limits(&source, &corpus, &q) {
                panic!("{text:?} limit {limit} offset {offset}: {e}");
            }
        }
    }
    // The conjunctive pass both ended walks and gave way to the second pass.
    let (ended, gave_way) = super::maxscore::CONJUNCTIVE_OUTCOMES.get();
    assert!(
        ended > 0 && gave_way > 0,
        "ended {ended}, gave way {gave_way}"
    );
}
