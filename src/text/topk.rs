//! The final ranking: candidates (documents whose base score may reach the answer) are
//! popped best base first; each is checked for supersession and the filter, its phrase
//! boost decided on its stored texts, and kept among the `offset + limit` best final
//! scores. The walk stops once no later candidate can enter: the phrase boost raises a
//! score by at most [`PHRASE_BOOST`].

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use super::context::phrase_boost_max;
use super::source::{NodeTexts, TextSource};
use super::{
    Accumulator, Analyzer, PHRASE_BOOST, ParsedQuery, TextField, TextHit, TextQuery, field_texts,
    snippet, text_has_phrase,
};
use crate::error::Result;
use crate::format::text::TEXT_FIELDS;
use crate::graph::NodeId;
use crate::model::Node;

/// A candidate before the phrase check, ordered by base score (higher first), then node id
/// (lower first): the order a max-heap pops them in.
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
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        self.base
            .total_cmp(&other.base)
            .then(other.node.cmp(&self.node))
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
struct PhraseMemo<'q> {
    analyzer: &'q Analyzer,
    phrase: &'q [String],
    known: HashMap<String, bool, foldhash::fast::RandomState>,
}

impl PhraseMemo<'_> {
    /// Whether `text` holds the query's phrase.
    #[inline]
    fn in_field(&mut self, text: &str) -> bool {
        if let Some(&known) = self.known.get(text) {
            return known;
        }
        let found = text_has_phrase(self.analyzer, text, self.phrase);
        self.known.insert(text.to_owned(), found);
        found
    }
}

/// The `offset + limit` best of `cands` by final score, in the answer's order
/// ([`Ranked::before`]): popped in base-score order (O(candidates) heapify, then O(log n)
/// per candidate the walk takes) until the `need`-th best final score beats a
/// candidate's base times the most the phrase can add.
///
/// # Errors
/// A damaged record.
pub(crate) fn rank_candidates<S: TextSource + ?Sized>(
    source: &S,
    q: &TextQuery,
    parsed: &ParsedQuery,
    analyzer: &Analyzer,
    cands: Vec<Candidate>,
) -> Result<Vec<Ranked>> {
    let need = q.offset.saturating_add(q.limit);
    let boost_max = phrase_boost_max(parsed);
    let mut cands = BinaryHeap::from(cands);
    let mut top: Vec<Ranked> = Vec::new();
    let mut memo = PhraseMemo {
        analyzer,
        phrase: &parsed.phrase,
        known: HashMap::with_hasher(foldhash::fast::RandomState::default()),
    };
    while let Some(c) = cands.pop() {
        if top.len() >= need && c.base * boost_max < top[need - 1].score {
            break;
        }
        if c.seg.is_some_and(|s| !source.is_current(s, c.node)) {
            continue;
        }
        // Only a document holding every significant word can hold the phrase, and only
        // in a field holding every one in its exact form; other candidates need their
        // record only for the filter.
        let phrase_fields = c.acc.phrase_fields(parsed.words);
        let phrase_possible = boost_max > 1.0
            && c.acc.words.count_ones() as usize == parsed.words
            && phrase_fields.contains(&true);
        // The filter needs the whole record.
        let record = if q.filter.is_empty() {
            None
        } else {
            let Some(node) = source.node(c.node)? else {
                continue;
            };
            if !q.filter.matches(&node) {
                continue;
            }
            Some(node)
        };
        let has_phrase = if phrase_possible {
            match phrase_in_node(source, c.node, record.as_ref(), phrase_fields, &mut memo)? {
                Some(found) => found,
                None => continue,
            }
        } else {
            false
        };
        let ranked = Ranked {
            score: if has_phrase {
                c.base * PHRASE_BOOST
            } else {
                c.base
            },
            len: c.len,
            node: c.node,
            record,
            acc: c.acc,
        };
        let at = top.partition_point(|x| x.before(&ranked));
        if at < need {
            top.insert(at, ranked);
            top.truncate(need);
        }
    }
    Ok(top)
}

/// Whether node `node`'s fields selected by `fields` hold the query's phrase; `None` when
/// the node is gone. A phrase check reads only the texts of the fields that may hold the
/// phrase (title and content borrowed from the segment, no other field decoded or copied:
/// a walk may check thousands of near-equal candidates), or `record` when the filter
/// read it already.
fn phrase_in_node<S: TextSource + ?Sized>(
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
        let node = match record {
            Some(n) => n,
            // Every candidate is a live node's newest version, so its record exists.
            None => match source.node(id)? {
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
            snippet: snippet(analyzer, &texts[field.index()], parsed),
        });
    }
    Ok(hits)
}
