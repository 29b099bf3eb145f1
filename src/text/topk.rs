//! The final ranking: candidates (documents whose base score may reach the answer) are
//! popped best base first; each is checked for supersession and the filter, its phrase
//! boost decided on its stored texts, and kept among the `offset + limit` best final
//! scores. The walk stops once no later candidate can enter: the phrase boost raises a
//! score by at most [`PHRASE_BOOST`].

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use super::context::phrase_boost_max;
use super::phrase::{Precheck, units_hold};
use super::source::{NodeTexts, TextSource};
use super::{
    Accumulator, Analyzer, PHRASE_BOOST, ParsedQuery, TextField, TextHit, TextQuery, field_texts,
    snippet,
};
use crate::error::Result;
use crate::format::text::TEXT_FIELDS;
use crate::graph::NodeId;
use crate::model::Node;

/// A candidate before the phrase check (taken in the order of its [`CandidateKey`]).
pub(crate) struct Candidate {
    pub node: u32,
    pub base: f64,
    pub acc: Accumulator,
    /// The segment whose version scored it (checked for supersession when popped); `None`
    /// for the delta, which holds live nodes only.
    pub seg: Option<usize>,
    /// The document's length (its fields' token counts summed): among equal scores the
    /// shorter document ranks first.
    pub len: u64,
    /// Whether it may hold the phrase as far as its segment's phrase-pair filter tells
    /// (`true` where there is none); `false` spares the ranking its phrase check.
    pub phrase: bool,
    /// Whether it holds the phrase, when the walk checked already (to lift its threshold
    /// by the final score).
    pub phrase_known: Option<bool>,
}

impl Candidate {
    /// The fields that may hold the phrase of `parsed` (`boost_max`: its
    /// [`phrase_boost_max`]), `None` when none can: only a document holding every
    /// significant word can hold the phrase, and only in a field holding every one in its
    /// exact form.
    pub(crate) fn phrase_fields(
        &self,
        words: usize,
        boost_max: f64,
    ) -> Option<[bool; TEXT_FIELDS]> {
        let fields = self.acc.phrase_fields(words);
        let possible = boost_max > 1.0
            && self.phrase
            && self.acc.words.count_ones() as usize == words
            && fields.contains(&true);
        possible.then_some(fields)
    }
}

/// Where a candidate stands in the order the final ranking takes them: base score
/// (higher first), then node id (lower first), then its index among the candidates
/// (`at`); sorted as these (24 bytes) rather than as the candidates.
#[derive(Clone, Copy)]
struct CandidateKey {
    base: f64,
    node: u32,
    at: usize,
}

impl CandidateKey {
    fn of(at: usize, c: &Candidate) -> CandidateKey {
        CandidateKey {
            base: c.base,
            node: c.node,
            at,
        }
    }
}

impl PartialEq for CandidateKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for CandidateKey {}

impl PartialOrd for CandidateKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for CandidateKey {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        self.base
            .total_cmp(&other.base)
            .then(other.node.cmp(&self.node))
            .then(other.at.cmp(&self.at))
    }
}

/// A document's length for the tie-break: its fields' token counts summed.
pub(crate) fn doc_length(lens: &[u32; TEXT_FIELDS]) -> u64 {
    lens.iter().map(|&l| u64::from(l)).sum()
}

/// A candidate after the phrase check, in the answer's order.
pub(crate) struct Ranked {
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
    #[inline]
    fn before(&self, other: &Ranked) -> bool {
        self.score > other.score
            || (self.score == other.score && (self.len, self.node) < (other.len, other.node))
    }
}

/// Phrase answers per field text: real collections repeat texts (licenses, boilerplate),
/// and the walk may reach many copies. Field texts run to kilobytes: hashed with foldhash
/// (SipHash showed at 4% of a search's time), no DoS resistance needed for a map that
/// lives one search.
pub(crate) struct PhraseMemo<'q> {
    analyzer: &'q Analyzer,
    phrase: &'q [String],
    precheck: Precheck<'q>,
    known: HashMap<String, bool, foldhash::fast::RandomState>,
}

impl<'q> PhraseMemo<'q> {
    /// A memo for the phrase of `parsed`.
    pub(crate) fn new(analyzer: &'q Analyzer, parsed: &'q ParsedQuery) -> PhraseMemo<'q> {
        PhraseMemo {
            analyzer,
            phrase: &parsed.phrase,
            precheck: Precheck::new(&parsed.phrase),
            known: HashMap::with_hasher(foldhash::fast::RandomState::default()),
        }
    }

    /// Whether `text` holds the query's phrase. The pre-check, which costs about what
    /// hashing the text does, comes first: only texts it passes are analysed, and
    /// remembered.
    #[inline]
    fn in_field(&mut self, text: &str) -> bool {
        if self.phrase.len() < 2 || !self.precheck.may_occur(text) {
            return false;
        }
        if let Some(&known) = self.known.get(text) {
            return known;
        }
        let found = units_hold(self.analyzer, text, self.phrase);
        self.known.insert(text.to_owned(), found);
        found
    }
}

/// How many candidates ahead of the one being ranked the final ranking asks the source
/// to start loading texts (a phrase check reads a record at random), and at twice that
/// what finds them.
const TEXTS_AHEAD: usize = 8;

/// The `offset + limit` best of `cands` by final score, in the answer's order
/// ([`Ranked::before`]). `theta` is a lower bound of the `offset + limit`-th best final
/// score (the walk's threshold): only candidates whose base times the most the phrase
/// can add reaches it are taken, in base-score order, until the `need`-th best final
/// score so far beats that product; each taken one is checked for supersession, the
/// filter and (when it may hold it) the phrase, the texts of the candidates a few places
/// on loading meanwhile.
///
/// # Errors
/// A damaged record.
pub(crate) fn rank_candidates<S: TextSource + ?Sized>(
    source: &S,
    q: &TextQuery,
    parsed: &ParsedQuery,
    memo: &mut PhraseMemo<'_>,
    cands: &[Candidate],
    theta: f64,
) -> Result<Vec<Ranked>> {
    let need = q.offset.saturating_add(q.limit);
    let boost_max = phrase_boost_max(parsed);
    let order = candidate_order(cands, theta, boost_max);
    let mut top: Vec<Ranked> = Vec::new();
    // Other candidates than those that may hold the phrase need their record only for
    // the filter.
    let phrase_fields = |c: &Candidate| c.phrase_fields(parsed.words, boost_max);
    let prefetch = |k: Option<&CandidateKey>, near: bool| {
        if let Some(c) = k.and_then(|k| cands.get(k.at))
            && phrase_fields(c).is_some()
        {
            source.prefetch_texts(c.node, near);
        }
    };
    for (i, key) in order.iter().enumerate().take(2 * TEXTS_AHEAD) {
        prefetch(Some(key), i < TEXTS_AHEAD);
    }
    for (i, key) in order.iter().enumerate() {
        prefetch(order.get(i + 2 * TEXTS_AHEAD), false);
        prefetch(order.get(i + TEXTS_AHEAD), true);
        let Some(c) = cands.get(key.at) else {
            continue;
        };
        if top.len() >= need && c.base * boost_max < top[need - 1].score {
            break;
        }
        let Some(ranked) = rank_one(source, q, c, phrase_fields(c), memo)? else {
            continue;
        };
        let at = top.partition_point(|x| x.before(&ranked));
        if at < need {
            top.insert(at, ranked);
            top.truncate(need);
        }
    }
    Ok(top)
}

/// The keys of the candidates whose base times `boost_max` (the most the phrase can add,
/// to a candidate that may hold it) reaches `theta`, a lower bound of the last hit's final score (the others cannot be
/// hits), best first.
fn candidate_order(cands: &[Candidate], theta: f64, boost_max: f64) -> Vec<CandidateKey> {
    let mut order: Vec<CandidateKey> = cands
        .iter()
        .enumerate()
        .filter(|(_, c)| c.base * if c.phrase { boost_max } else { 1.0 } >= theta)
        .map(|(at, c)| CandidateKey::of(at, c))
        .collect();
    order.sort_unstable_by(|a, b| b.cmp(a));
    order
}

/// Candidate `c` with its final score; `None` when it is superseded, gone or filtered out.
/// `phrase_fields`: the fields that may hold the phrase, `None` when none can.
fn rank_one<S: TextSource + ?Sized>(
    source: &S,
    q: &TextQuery,
    c: &Candidate,
    phrase_fields: Option<[bool; TEXT_FIELDS]>,
    memo: &mut PhraseMemo<'_>,
) -> Result<Option<Ranked>> {
    if c.seg.is_some_and(|s| !source.is_current(s, c.node)) {
        return Ok(None);
    }
    // The filter needs the whole record.
    let record = if q.filter.is_empty() {
        None
    } else {
        let Some(node) = source.node(c.node)? else {
            return Ok(None);
        };
        if !q.filter.matches(&node) {
            return Ok(None);
        }
        Some(node)
    };
    let has_phrase = match (phrase_fields, c.phrase_known) {
        (Some(_), Some(known)) => known,
        (Some(fields), None) => {
            match phrase_in_node(source, c.node, record.as_ref(), fields, memo)? {
                Some(found) => found,
                None => return Ok(None),
            }
        }
        (None, _) => false,
    };
    Ok(Some(Ranked {
        score: if has_phrase {
            c.base * PHRASE_BOOST
        } else {
            c.base
        },
        len: c.len,
        node: c.node,
        record,
        acc: c.acc,
    }))
}

/// Whether node `node`'s fields selected by `fields` hold the query's phrase; `None` when
/// the node is gone. A phrase check reads only the texts of the fields that may hold the
/// phrase (title and content borrowed from the segment, no other field decoded or copied:
/// a walk may check thousands of near-equal candidates), or `record` when the filter
/// read it already.
pub(crate) fn phrase_in_node<S: TextSource + ?Sized>(
    source: &S,
    node: u32,
    record: Option<&Arc<Node>>,
    fields: [bool; TEXT_FIELDS],
    memo: &mut PhraseMemo<'_>,
) -> Result<Option<bool>> {
    // Keeps a node read here alive for its texts.
    let whole: Arc<Node>;
    let texts = match record {
        Some(n) => field_texts(n),
        None => match source.node_texts(node)? {
            None => return Ok(None),
            // Title and content read in place (the properties' field cannot hold the
            // phrase).
            Some(NodeTexts::Record(t)) if !fields[TextField::Props.index()] => [
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
                let Some(n) = source.node(node)? else {
                    return Ok(None);
                };
                whole = n;
                field_texts(&whole)
            }
        },
    };
    Ok(Some(
        texts
            .iter()
            .zip(fields)
            .any(|(text, on)| on && memo.in_field(text)),
    ))
}

/// The text of `node`'s field `field`.
fn one_field(node: &Node, field: TextField) -> Cow<'_, str> {
    field_texts(node)
        .into_iter()
        .nth(field.index())
        .unwrap_or_default()
}

/// The hits of `top` past the query's offset, each with its best field and a snippet of
/// it.
///
/// # Errors
/// A damaged record.
pub(crate) fn hits<S: TextSource + ?Sized>(
    source: &S,
    q: &TextQuery,
    parsed: &ParsedQuery,
    analyzer: &Analyzer,
    top: Vec<Ranked>,
) -> Result<Vec<TextHit>> {
    let mut hits = Vec::with_capacity(top.len().saturating_sub(q.offset));
    for Ranked {
        score,
        node: id,
        record,
        acc,
        ..
    } in top.into_iter().skip(q.offset)
    {
        let field = acc.best_field();
        let snippet = if q.snippets {
            match hit_snippet(source, parsed, analyzer, id, record, field)? {
                Some(s) => s,
                None => continue,
            }
        } else {
            String::new()
        };
        hits.push(TextHit {
            node: NodeId(id),
            score,
            field,
            snippet,
        });
    }
    Ok(hits)
}

/// The snippet of hit `id`'s `field`, its text taken from the record the ranking read
/// (`record`), else the title or content borrowed from the segment (properties not
/// decoded), else the whole node. `None` when the node has no record (every candidate is
/// a live node's newest version, so it has one).
fn hit_snippet<S: TextSource + ?Sized>(
    source: &S,
    parsed: &ParsedQuery,
    analyzer: &Analyzer,
    id: u32,
    record: Option<Arc<Node>>,
    field: TextField,
) -> Result<Option<String>> {
    let whole: Arc<Node>;
    let text: Cow<'_, str> = match record {
        Some(n) => {
            whole = n;
            one_field(&whole, field)
        }
        None => match source.node_texts(id)? {
            None => return Ok(None),
            Some(NodeTexts::Record(t)) if field == TextField::Title => Cow::Borrowed(t.title),
            Some(NodeTexts::Record(t)) if field == TextField::Content => Cow::Borrowed(t.content),
            Some(NodeTexts::Node(n)) => {
                whole = n;
                one_field(&whole, field)
            }
            Some(NodeTexts::Record(_)) => match source.node(id)? {
                Some(n) => {
                    whole = n;
                    one_field(&whole, field)
                }
                None => return Ok(None),
            },
        },
    };
    Ok(Some(snippet(analyzer, &text, parsed)))
}
