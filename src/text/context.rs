//! What scoring a document needs besides its postings: the query's terms and their
//! idfs, the field weights and average lengths, and the factors by which the boosts can
//! still raise a sum of term scores (the bounds of the pruned walk).

use super::{ALL_WORDS_BOOST, PHRASE_BOOST, ParsedQuery, QueryTerm};
use crate::format::text::{PairFilter, TEXT_FIELDS, filter_holds};

/// What scoring a document needs besides its postings.
#[derive(Clone)]
pub(crate) struct ScoreContext<'q> {
    pub terms: &'q [QueryTerm],
    pub idfs: &'q [f64],
    pub weights: &'q [f64; TEXT_FIELDS],
    pub avg: [f64; TEXT_FIELDS],
    pub words: usize,
    /// Bits `0..words`: every query word.
    all_words_mask: u64,
    /// Most the phrase boost multiplies a base score by (with room for rounding).
    phrase_factor: f64,
    /// The phrase-pair filter bits a document holding the phrase has
    /// ([`ParsedQuery::phrase_pairs`]).
    phrase_pairs: PairFilter,
    /// Most both boosts together multiply a sum of term scores by (with room for
    /// rounding); both need every query word in the document.
    bound_factor: f64,
    /// Most the all-words boost alone multiplies it by (with room for rounding): the
    /// bound of a document whose phrase-pair filter rules the phrase out.
    words_factor: f64,
}

impl<'q> ScoreContext<'q> {
    /// The context of `parsed` with these idfs (one per query term), field weights and
    /// average field lengths.
    pub fn new(
        parsed: &'q ParsedQuery,
        idfs: &'q [f64],
        weights: &'q [f64; TEXT_FIELDS],
        avg: [f64; TEXT_FIELDS],
    ) -> ScoreContext<'q> {
        let boost_max = phrase_boost_max(parsed);
        let words_boost = if parsed.words >= 2 {
            ALL_WORDS_BOOST
        } else {
            1.0
        };
        ScoreContext {
            terms: &parsed.terms,
            idfs,
            weights,
            avg,
            words: parsed.words,
            all_words_mask: words_mask(parsed.words),
            phrase_factor: boost_max * (1.0 + 1e-9),
            phrase_pairs: parsed.phrase_pairs(),
            // What a base score can still gain (all words, phrase), with room for rounding:
            // a bound times this below the threshold cannot reach the top hits.
            bound_factor: boost_max * words_boost * (1.0 + 1e-9),
            words_factor: words_boost * (1.0 + 1e-9),
        }
    }

    /// This context for a segment that holds the phrase nowhere (its phrase-pair set
    /// lacks one of the phrase's pairs): no document there can get the phrase boost, so
    /// its bounds leave it out and no document's filter is read for it.
    pub fn without_phrase(&self) -> ScoreContext<'q> {
        ScoreContext {
            phrase_factor: 1.0 + 1e-9,
            bound_factor: self.words_factor,
            ..self.clone()
        }
    }

    /// Query term `t`'s weight × idf.
    #[inline]
    pub fn weight_idf(&self, t: usize) -> f64 {
        self.terms[t].weight * self.idfs[t]
    }

    /// The word bit of query term `t` (0 for a whole identifier, which is no word).
    #[inline]
    pub fn word_bit(&self, t: usize) -> u64 {
        self.terms[t].word.map_or(0, |w| 1u64 << w)
    }

    /// Most the boosts multiply the term scores of a document that can hold at most the
    /// query words in `possible` by: both boosts need every word, so a document missing
    /// one gets neither (factor 1, with room for rounding).
    #[inline]
    pub fn factor(&self, possible: u64) -> f64 {
        self.with_all_words(possible, self.bound_factor)
    }

    /// [`ScoreContext::factor`] for a document that cannot hold the phrase.
    #[inline]
    pub fn factor_without_phrase(&self, possible: u64) -> f64 {
        self.with_all_words(possible, self.words_factor)
    }

    /// `factor` for a document that may hold every query word (`possible`), else 1 (with
    /// room for rounding): every boost needs every word.
    #[inline]
    fn with_all_words(&self, possible: u64, factor: f64) -> f64 {
        if possible & self.all_words_mask == self.all_words_mask {
            factor
        } else {
            1.0 + 1e-9
        }
    }

    /// Most the phrase boost multiplies a document's base score by (`words`: the query
    /// words its accumulator holds): only a document holding every word can hold the
    /// phrase.
    #[inline]
    pub fn final_factor(&self, words: u64) -> f64 {
        self.with_all_words(words, self.phrase_factor)
    }

    /// Whether a document holding the query words `words` may get the phrase boost:
    /// not when it lacks a word, nor when `allowed` (what its phrase-pair filter says,
    /// asked only of a document holding every word) rules the phrase out.
    #[inline]
    pub fn phrase_possible(&self, words: u64, allowed: impl FnOnce() -> bool) -> bool {
        self.final_factor(words) > 1.0 + 1e-9 && allowed()
    }

    /// Whether a document whose phrase-pair filter is `filter` may hold the phrase
    /// (`None`, a segment without filters: it may).
    #[inline]
    pub fn phrase_allowed(&self, filter: Option<&PairFilter>) -> bool {
        filter.is_none_or(|f| filter_holds(f, &self.phrase_pairs))
    }
}

/// The phrase boost a query can give: [`PHRASE_BOOST`] for a phrase of two units or more,
/// else none.
pub(crate) fn phrase_boost_max(parsed: &ParsedQuery) -> f64 {
    if parsed.phrase.len() >= 2 {
        PHRASE_BOOST
    } else {
        1.0
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
