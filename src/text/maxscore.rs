//! One blocked (layout 2 or 3) segment scored document at a time with MaxScore and block bounds
//! (DESIGN.md §13, "Cost"): query terms are ordered by their bound; the longest prefix
//! whose bounds together cannot lift a document above the threshold is *non-essential*:
//! only documents of the other (essential) terms are visited, and a non-essential term's
//! list is only sought to those documents, skipping whole blocks. A document is dropped
//! as soon as its score so far plus the bounds of the terms not yet read (per block
//! where known) falls below the threshold; the survivors are scored exactly, in
//! query-term order (the same sums an exhaustive pass makes) and become candidates.
//! A query of several words may first be walked over the documents holding every word
//! only (step 6 there; [`score_segment`]).

use super::context::ScoreContext;
use super::cursor::{TermCursor, mask_terms};
use super::prime::{PRIME_TERMS, prime_threshold};
use super::rank::passes_filter;
use super::source::{SegmentIndex, TextSource};
use super::threshold::Threshold;
use super::topk::{Candidate, PhraseMemo, phrase_in_node};
use super::{Accumulator, PHRASE_BOOST, TextQuery, term_fields_scaled, tf_scale};
use crate::error::Error;
use crate::format::codec::DecodeError;
use crate::format::text::{PostingList, TextIndexView};

/// How many postings ahead of an essential cursor the walk starts loading a document's
/// lengths.
const PREFETCH_AHEAD: u32 = 8;

/// When the conjunctive pass runs and when it gives way (see [`score_segment`]). Each
/// limit only moves work between the passes: the answers are the same for any values
/// (the rank oracle runs with several).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConjunctiveLimits {
    /// The query's lists in the segment hold at least this many postings together: a
    /// walk over fewer is cheap anyway, and the pass would only add its own cost.
    pub postings_min: u64,
    /// A word is *heavy* when a document without it (and off the whole identifiers'
    /// lists) is bounded by at most this share of the bound of the query's word terms;
    /// the pass requires only heavy words (a part of a name, a word of little weight,
    /// could not be required by any threshold the pass reaches: a second pass would
    /// always follow).
    pub without_share_max: f64,
    /// How often (in documents found) the pass checks whether it pays.
    pub check_every: u64,
    /// The pass gives way when the documents found are more than this share of the
    /// postings of the cover it went furthest through: the words mostly come together,
    /// and seeking the covers to each other skips too little to pay for the seeks.
    pub found_share_max: f64,
}

/// The limits searches use, chosen on the comparison corpus (benches/compare/text/RESULTS.md,
/// "Documents holding every word first").
const CONJUNCTIVE: ConjunctiveLimits = ConjunctiveLimits {
    postings_min: 20_000,
    without_share_max: 0.85,
    check_every: 64,
    found_share_max: 0.6,
};

#[cfg(test)]
thread_local! {
    /// Limits a test runs the walk with instead of [`CONJUNCTIVE`], and how often the
    /// conjunctive pass ended a segment's walk / gave way (so the tests can tell that
    /// they reached both).
    pub(crate) static CONJUNCTIVE_FOR_TESTS: std::cell::Cell<Option<ConjunctiveLimits>> =
        const { std::cell::Cell::new(None) };
    pub(crate) static CONJUNCTIVE_OUTCOMES: std::cell::Cell<(u64, u64)> =
        const { std::cell::Cell::new((0, 0)) };
}

/// The limits in force.
#[inline]
fn conjunctive_limits() -> ConjunctiveLimits {
    #[cfg(test)]
    if let Some(limits) = CONJUNCTIVE_FOR_TESTS.get() {
        return limits;
    }
    CONJUNCTIVE
}

/// One segment's text index as a search sees it: the segment's position in the source,
/// its index, and its postings list per query term (`None`: not indexed there).
#[derive(Clone, Copy)]
pub(crate) struct SegmentLists<'v, 'a> {
    pub segment: usize,
    pub index: &'v SegmentIndex<'a>,
    pub lists: &'v [Option<PostingList<'a>>],
}

/// Why a segment's pruned scoring stopped: damaged postings, or an error reading a record.
pub(crate) enum WalkError {
    Decode(DecodeError),
    Engine(Error),
}

impl From<DecodeError> for WalkError {
    fn from(e: DecodeError) -> WalkError {
        WalkError::Decode(e)
    }
}

impl From<Error> for WalkError {
    fn from(e: Error) -> WalkError {
        WalkError::Engine(e)
    }
}

/// Scores segment `seg` (layout 2 or 3) document at a time, offering documents that may be
/// hits to `top` and pushing those that may reach it to `cands` (see the module doc).
///
/// When the query's weighty words each have one list holding all their documents (their
/// *covers*), a first pass visits only the documents holding every one of those words
/// (found by seeking the covers to each other) or a whole identifier of the query: the
/// best documents of most queries of several words (both boosts need every word), so
/// the threshold reaches nearly its final level at a fraction of the visits. If then no
/// other document can reach the threshold, that is the whole answer; else a second pass
/// walks the segment again from that threshold, skipping the documents the first one
/// took.
pub(crate) fn score_segment<S: TextSource + ?Sized>(
    source: &S,
    seg: SegmentLists<'_, '_>,
    ctx: &ScoreContext<'_>,
    top: &mut Threshold,
    cands: &mut Vec<Candidate>,
    q: &TextQuery,
    memo: &mut PhraseMemo<'_>,
) -> Result<(), WalkError> {
    let terms = cursors(seg, ctx)?;
    if terms.is_empty() {
        return Ok(());
    }
    let n = terms.len();
    let primed = prime_threshold(
        source,
        seg,
        ctx,
        &terms[n.saturating_sub(PRIME_TERMS)..],
        top,
        q,
    )?;
    let mut walk = Walk::new(terms, ctx, seg.index.analysis_current);
    let mut taken = Vec::new();
    let limits = conjunctive_limits();
    if let Some(plan) = walk.conjunction(&limits) {
        walk.conjunction = plan;
        let pass = Pass {
            primed: &primed,
            taken: &mut taken,
            conjunctive: Some(&limits),
            memo: &mut *memo,
        };
        let finished = walk_segment(source, seg, ctx, top, cands, q, &mut walk, pass)?;
        let ended = finished && walk.heavy_words_required(top.value());
        #[cfg(test)]
        CONJUNCTIVE_OUTCOMES.with(|o| {
            let (e, g) = o.get();
            o.set((e + u64::from(ended), g + u64::from(!finished)));
        });
        if ended {
            return Ok(());
        }
        walk = Walk::new(cursors(seg, ctx)?, ctx, seg.index.analysis_current);
    }
    let pass = Pass {
        primed: &primed,
        taken: &mut taken,
        conjunctive: None,
        memo,
    };
    walk_segment(source, seg, ctx, top, cands, q, &mut walk, pass)?;
    Ok(())
}

/// One cursor per distinct list of the query terms indexed in `seg`, sorted by bound.
fn cursors<'a>(
    seg: SegmentLists<'_, 'a>,
    ctx: &ScoreContext<'_>,
) -> Result<Vec<TermCursor<'a>>, DecodeError> {
    let mut terms = Vec::new();
    // Query terms already given a cursor (a query has at most 64 terms).
    let mut served = 0u64;
    for (t, list) in seg.lists.iter().enumerate() {
        let Some(list) = *list else {
            continue;
        };
        if served & (1u64 << t) != 0 {
            continue;
        }
        // One cursor for every later term with the same list (a term already served has
        // another cursor's list, which is not this one's).
        let mut mask = 1u64 << t;
        for (u, other) in seg.lists.iter().enumerate().skip(t + 1) {
            if served & (1u64 << u) == 0
                && let Some(other) = other
                && list.same_as(other)?
            {
                mask |= 1u64 << u;
            }
        }
        served |= mask;
        if let Some(cursor) = TermCursor::start(mask, list, ctx)? {
            terms.push(cursor);
        }
    }
    terms.sort_by(|a, b| a.bound.total_cmp(&b.bound));
    Ok(terms)
}

/// What the conjunctive pass visits: documents on every one of `covers` (the lists of
/// the `heavy` words) or on one of `either` (whole identifiers' lists, documents of
/// which need no other word). Masks of slots, and of query words for `heavy`.
#[derive(Clone, Copy, Debug, Default)]
struct Conjunction {
    covers: u64,
    either: u64,
    heavy: u64,
}

/// What one pass of [`walk_segment`] shares with the other.
struct Pass<'p, 'q> {
    /// The primed documents, sorted: in the threshold already.
    primed: &'p [u32],
    /// The documents the conjunctive pass made candidates of (increasing): it adds to
    /// them, the second pass skips them.
    taken: &'p mut Vec<u32>,
    /// The conjunctive pass's limits; `None` for the pass over every document.
    conjunctive: Option<&'p ConjunctiveLimits>,
    /// The phrase checks made so far (the final ranking's too).
    memo: &'p mut PhraseMemo<'q>,
}

/// Walks `seg` with `walk` until no document can reach the threshold (`true`), or, in
/// the conjunctive pass, until it finds that its words mostly come together (`false`):
/// seeking the covers to each other then skips too little to pay.
#[allow(clippy::too_many_arguments)]
fn walk_segment<S: TextSource + ?Sized>(
    source: &S,
    seg: SegmentLists<'_, '_>,
    ctx: &ScoreContext<'_>,
    top: &mut Threshold,
    cands: &mut Vec<Candidate>,
    q: &TextQuery,
    walk: &mut Walk<'_>,
    pass: Pass<'_, '_>,
) -> Result<bool, WalkError> {
    let view = &seg.index.view;
    // The first of the conjunctive pass's documents not yet passed (documents come in
    // increasing order).
    let mut taken_at = 0usize;
    loop {
        let theta = top.value();
        if !walk.split(theta, ctx) {
            break;
        }
        let Some(doc) = walk.next_candidate()? else {
            break;
        };
        if let Some(limits) = pass.conjunctive
            && walk.words_mostly_together(limits)
        {
            return Ok(false);
        }
        if pass.conjunctive.is_none() {
            while pass.taken.get(taken_at).is_some_and(|&t| t < doc) {
                taken_at += 1;
            }
            if pass.taken.get(taken_at) == Some(&doc) {
                walk.step_past(doc, view)?;
                continue;
            }
        }
        if let Some(scored) = walk.visit(doc, theta, seg.index, ctx)? {
            let base = scored.acc.base(ctx.words);
            // Only a document that may hold the phrase can gain its boost; its filter
            // rules most of those out that only hold the words.
            let phrase = ctx.phrase_possible(scored.acc.words, || {
                // The visit's reading of the filter, when it read it.
                scored
                    .phrase
                    .unwrap_or_else(|| seg.index.allows_phrase(ctx, doc as usize))
            });
            let factor = if phrase {
                ctx.final_factor(scored.acc.words)
            } else {
                1.0 + 1e-9
            };
            if base * factor >= theta {
                let node = *seg.index.node_ids.get(doc as usize).ok_or_else(|| {
                    DecodeError::new(
                        0,
                        format!("postings name record {doc}, which does not exist"),
                    )
                })?;
                let mut c = Candidate {
                    node,
                    base,
                    acc: scored.acc,
                    seg: Some(seg.segment),
                    len: scored.len,
                    phrase,
                    phrase_known: None,
                };
                // A primed document is in the threshold already (by a lower score).
                if pass.primed.binary_search(&doc).is_err() {
                    // A candidate that would lift the threshold by its phrase (θ is still
                    // the threshold's value) is checked now, and offered at its final
                    // score.
                    let mut offered = base;
                    if phrase
                        && base * PHRASE_BOOST > theta
                        && q.filter.is_empty()
                        && source.is_current(seg.segment, node)
                        && let Some(fields) = c.phrase_fields(ctx.words, PHRASE_BOOST)
                        && let Some(found) = phrase_in_node(source, node, None, fields, pass.memo)?
                    {
                        c.phrase_known = Some(found);
                        if found {
                            offered = base * PHRASE_BOOST;
                        } else {
                            c.phrase = false;
                        }
                    }
                    top.offer(offered, || {
                        Ok(source.is_current(seg.segment, node) && passes_filter(source, q, node)?)
                    })?;
                }
                cands.push(c);
                if pass.conjunctive.is_some() {
                    pass.taken.push(doc);
                }
            }
        }
        walk.step_past(doc, view)?;
    }
    Ok(true)
}

/// The terms' bounds in bound order and what the split needs of them: sums of prefixes,
/// their words, and the terms each requires.
struct Bounds {
    /// `prefix[j]`: the bounds of `terms[..j]` together.
    prefix: Vec<f64>,
    /// `prefix_words[j]`: their words (a document holds at most the words of its terms,
    /// and without all of them it gets no boost: `ScoreContext::factor`).
    prefix_words: Vec<u64>,
    /// Per slot, a mask of the slots of the terms its terms require (an exact word's
    /// stem; not the slot itself, which serves both when their lists are equal): where
    /// one of those is absent, so is this one, and neither its bound nor its words can
    /// count. Only for segments whose analysis makes that true (`ANALYSIS_SINCE_FORMAT`).
    req_slots: Vec<u64>,
    /// `prefix_req[j]`: the slots `terms[..j]` require (n ≤ QUERY_TERMS_MAX = 64 slots).
    prefix_req: Vec<u64>,
    bounds: Vec<f64>,
    bits: Vec<u64>,
    /// `outside[j]`: the bounds and words of `terms[..j]` for a document none of
    /// `terms[j..]` is at (what the split at j leaves to documents outside the essential
    /// lists).
    outside: Vec<(f64, u64)>,
}

impl Bounds {
    /// The bounds of `terms` (sorted by bound); `slot_of` maps query terms to slots.
    fn new(
        terms: &[TermCursor<'_>],
        slot_of: &[Option<usize>],
        ctx: &ScoreContext<'_>,
        analysis_current: bool,
    ) -> Bounds {
        let n = terms.len();
        let mut prefix = vec![0.0f64; n + 1];
        let mut prefix_words = vec![0u64; n + 1];
        for j in 0..n {
            prefix[j + 1] = prefix[j] + terms[j].bound;
            prefix_words[j + 1] = prefix_words[j] | terms[j].words;
        }
        let req_slots: Vec<u64> = terms
            .iter()
            .enumerate()
            .map(|(j, t)| {
                mask_terms(t.terms)
                    .filter_map(|u| ctx.terms[u].requires.filter(|_| analysis_current))
                    .filter_map(|r| slot_of.get(r).copied().flatten())
                    .filter(|&r| r != j)
                    .fold(0u64, |m, r| m | 1u64 << r)
            })
            .collect();
        let mut prefix_req = vec![0u64; n + 1];
        for j in 0..n {
            prefix_req[j + 1] = prefix_req[j] | req_slots[j];
        }
        let mut b = Bounds {
            prefix,
            prefix_words,
            req_slots,
            prefix_req,
            bounds: terms.iter().map(|t| t.bound).collect(),
            bits: terms.iter().map(|t| t.words).collect(),
            outside: Vec::new(),
        };
        b.outside = (0..=n)
            .map(|j| {
                let at_or_after = u32::try_from(j)
                    .ok()
                    .and_then(|j| u64::MAX.checked_shl(j))
                    .unwrap_or(0);
                b.rest(j, at_or_after)
            })
            .collect();
        b
    }

    /// The slot whose list holds every document that has the word `bit`: its only slot,
    /// or the one every other slot of the word requires (an exact form's stem). `None`
    /// when no slot or several do.
    fn cover(&self, bit: u64) -> Option<usize> {
        let slots = (0..self.bits.len())
            .filter(|&j| self.bits[j] & bit != 0)
            .fold(0u64, |m, j| m | 1u64 << j);
        mask_terms(slots)
            .find(|&c| mask_terms(slots).all(|j| j == c || self.req_slots[j] & (1u64 << c) != 0))
    }

    /// Whether a term slot `j`'s terms require is among the slots of `absent`.
    #[inline]
    fn requirement_absent(&self, j: usize, absent: u64) -> bool {
        self.req_slots[j] & absent != 0
    }

    /// The bounds and words of `terms[..j]` together, leaving out the terms whose
    /// required term is known absent (`absent`: a mask of slots).
    #[inline]
    fn rest(&self, j: usize, absent: u64) -> (f64, u64) {
        if absent & self.prefix_req[j] == 0 {
            return (self.prefix[j], self.prefix_words[j]);
        }
        let (mut sum, mut words) = (0.0, 0u64);
        for k in 0..j {
            if self.requirement_absent(k, absent) {
                continue;
            }
            sum += self.bounds[k];
            words |= self.bits[k];
        }
        (sum, words)
    }
}

/// A document that survived the bounds, scored exactly.
struct Scored {
    acc: Accumulator,
    /// What its phrase-pair filter said of the phrase, when the bounds read it.
    phrase: Option<bool>,
    /// Its length (its fields' token counts summed), for the tie-break.
    len: u64,
}

/// The walk over one segment: the cursors in bound order and what the visits keep.
struct Walk<'a> {
    terms: Vec<TermCursor<'a>>,
    bounds: Bounds,
    /// Per query term, its cursor's slot in `terms` (`None`: not indexed in this
    /// segment).
    slot_of: Vec<Option<usize>>,
    /// `terms[..essential]` are non-essential.
    essential: usize,
    /// The slots whose lists are at the document under consideration (a mask: at most
    /// 64 slots).
    at_doc: u64,
    /// The last `rest(essential, absent)` of the bound check: (essential, absent, answer).
    rest_memo: Option<(usize, u64, (f64, u64))>,
    /// The non-essential terms' block bounds summed: (`essential` when summed, the last
    /// record for which every one of them holds, the sum). Recomputed only when the walk
    /// passes a block of one of them or the split moves.
    ne_bounds: Option<(usize, u32, f64)>,
    /// Per query word: the most a document without it and without the query's whole
    /// identifiers can score (the bounds of the other words' terms, with no boost), and
    /// the slot whose list holds every document that has the word, when one does.
    words: Vec<(f64, Option<usize>)>,
    /// The slots of terms that stand for no word (whole identifiers).
    wordless: u64,
    /// What the conjunctive pass visits; empty for a pass over every document that may
    /// reach the threshold.
    conjunction: Conjunction,
    /// Documents the conjunctive pass found all its lists on.
    agreed: u64,
}

/// What the bound checks of one document know: the words it can hold (those of the
/// essential terms at it, and of every non-essential term until its list is sought), the
/// slots known not to hold it, and the essential terms' bounds at their tfs.
struct Visit {
    doc: u32,
    found_words: u64,
    absent: u64,
    tf_sum: f64,
    /// What the document's phrase-pair filter says of the phrase, once read.
    phrase: Option<bool>,
}

impl Visit {
    /// Whether a bound `sum` of this document's term scores, when it may hold the words
    /// `possible`, reaches `theta` after the boosts. Its phrase-pair filter is read (once)
    /// only when the phrase boost decides it.
    #[inline]
    fn reaches(
        &mut self,
        sum: f64,
        possible: u64,
        theta: f64,
        ctx: &ScoreContext<'_>,
        index: &SegmentIndex<'_>,
    ) -> bool {
        if sum * ctx.factor(possible) < theta {
            return false;
        }
        if sum * ctx.factor_without_phrase(possible) >= theta {
            return true;
        }
        let doc = self.doc as usize;
        *self
            .phrase
            .get_or_insert_with(|| index.allows_phrase(ctx, doc))
    }
}

impl<'a> Walk<'a> {
    fn new(terms: Vec<TermCursor<'a>>, ctx: &ScoreContext<'_>, analysis_current: bool) -> Walk<'a> {
        let mut slot_of = vec![None; ctx.terms.len()];
        for (j, t) in terms.iter().enumerate() {
            for u in mask_terms(t.terms) {
                slot_of[u] = Some(j);
            }
        }
        let bounds = Bounds::new(&terms, &slot_of, ctx, analysis_current);
        let words = (0..ctx.words)
            .map(|w| {
                let bit = 1u64 << w;
                let without: f64 = terms
                    .iter()
                    .filter(|t| t.words != 0 && t.words & bit == 0)
                    .map(|t| t.bound)
                    .sum();
                (without * ctx.factor(!bit), bounds.cover(bit))
            })
            .collect();
        let wordless = (0..terms.len())
            .filter(|&j| terms[j].words == 0)
            .fold(0u64, |m, j| m | 1u64 << j);
        Walk {
            terms,
            bounds,
            slot_of,
            essential: 0,
            at_doc: 0,
            rest_memo: None,
            ne_bounds: None,
            words,
            wordless,
            conjunction: Conjunction::default(),
            agreed: 0,
        }
    }

    /// What the conjunctive pass visits (see [`score_segment`]): the documents on the
    /// covers of every *heavy* word — a word whose absence leaves a document (outside the
    /// whole identifiers' lists) at most `limits.without_share_max` of the bound of the
    /// query's word terms — or on a whole identifier's list. `None` when fewer than two
    /// words are heavy and have covers, when a query without a whole identifier has a
    /// word that is not, or when the lists are short ([`ConjunctiveLimits`]).
    fn conjunction(&self, limits: &ConjunctiveLimits) -> Option<Conjunction> {
        let postings: u64 = self
            .terms
            .iter()
            .map(|t| u64::from(t.cursor.list().df()))
            .sum();
        if postings < limits.postings_min {
            return None;
        }
        let of_words: f64 = self
            .terms
            .iter()
            .filter(|t| t.words != 0)
            .map(|t| t.bound)
            .sum();
        let mut plan = Conjunction {
            either: self.wordless,
            ..Conjunction::default()
        };
        for (w, &(without, cover)) in self.words.iter().enumerate() {
            if let Some(cover) = cover
                && without <= limits.without_share_max * of_words
            {
                plan.covers |= 1u64 << cover;
                plan.heavy |= 1u64 << w;
            }
        }
        // Without a whole identifier every word must be heavy: a light word would leave
        // its documents to a second pass, which then costs more than the first saves.
        let all_words = (0..self.words.len()).fold(0u64, |m, w| m | 1u64 << w);
        let enough = self.wordless != 0 || plan.heavy == all_words;
        (enough && plan.heavy.count_ones() >= 2).then_some(plan)
    }

    /// Whether the conjunctive pass should give way (checked every
    /// `limits.check_every` documents it finds): when they are more than
    /// `limits.found_share_max` of the postings of the cover it went furthest through.
    #[inline]
    fn words_mostly_together(&self, limits: &ConjunctiveLimits) -> bool {
        if self.agreed == 0 || !self.agreed.is_multiple_of(limits.check_every.max(1)) {
            return false;
        }
        let passed = mask_terms(self.conjunction.covers)
            .map(|j| self.terms[j].cursor.postings_read())
            .max()
            .unwrap_or(0);
        // Counts of postings (≤ 2^32): exact in f64.
        #[allow(clippy::cast_precision_loss)]
        let found = self.agreed as f64;
        found > limits.found_share_max * f64::from(passed)
    }

    /// Whether a document outside the conjunctive pass's lists stays below `theta`: one
    /// without a heavy word (and off the whole identifiers' lists) is bounded by the
    /// other words' terms, with no boost.
    fn heavy_words_required(&self, theta: f64) -> bool {
        mask_terms(self.conjunction.heavy).all(|w| self.words[w].0 < theta)
    }

    /// The next document to visit, `None` when none is left: the least of the essential
    /// lists' documents, or, in the conjunctive pass, the first from there on that every
    /// cover holds or a whole identifier's list does (the rest skipped without a visit).
    #[inline]
    fn next_candidate(&mut self) -> Result<Option<u32>, DecodeError> {
        if self.conjunction.covers == 0 {
            return Ok(self.next_doc());
        }
        self.leapfrog()
    }

    /// [`Walk::next_candidate`] in the conjunctive pass: the whole identifiers' lists
    /// are sought to the least essential document, and the covers to each other (each
    /// seek to the furthest any of them stands on) until they agree on a document, or
    /// pass one of those lists' (no cursor is ever sought past the document visited
    /// next: a list holding it must stand on it); the essential lists are sought only
    /// to that document.
    #[inline(never)]
    fn leapfrog(&mut self) -> Result<Option<u32>, DecodeError> {
        let Some(mut lo) = self.next_doc() else {
            return Ok(None);
        };
        loop {
            // The first document at or after `lo` on a whole identifier's list.
            let mut either = u32::MAX;
            for j in mask_terms(self.conjunction.either) {
                let cursor = &mut self.terms[j].cursor;
                if cursor.seek(lo)? {
                    either = either.min(cursor.rec);
                }
            }
            // The first document at or after `lo` on every cover, unless `either` comes
            // first.
            let mut on_all = lo;
            let mut agreed = false;
            while !agreed && on_all <= either {
                agreed = true;
                for j in mask_terms(self.conjunction.covers) {
                    let cursor = &mut self.terms[j].cursor;
                    if !cursor.seek(on_all)? {
                        on_all = u32::MAX;
                        break;
                    }
                    if cursor.rec > on_all {
                        on_all = cursor.rec;
                        agreed = false;
                        if on_all > either {
                            break;
                        }
                    }
                }
            }
            let next = on_all.min(either);
            if next == u32::MAX {
                // u32::MAX is no record: record indices are below the segment's count.
                return Ok(None);
            }
            for t in &mut self.terms[self.essential..] {
                if !t.cursor.done() && t.cursor.rec < next {
                    t.cursor.seek(next)?;
                }
            }
            match self.next_doc() {
                None => return Ok(None),
                Some(target) if target == next => {
                    self.agreed += 1;
                    return Ok(Some(next));
                }
                Some(target) => lo = target,
            }
        }
    }

    /// Moves the split for threshold `theta`: the longest prefix whose bounds together
    /// (for a document outside the other lists) stay below it is non-essential. `false`
    /// when every term is: no document can reach `theta` any more.
    #[inline]
    fn split(&mut self, theta: f64, ctx: &ScoreContext<'_>) -> bool {
        let n = self.terms.len();
        let outside = &self.bounds.outside;
        while self.essential < n
            && outside[self.essential + 1].0 * ctx.factor(outside[self.essential + 1].1) < theta
        {
            self.essential += 1;
        }
        self.essential < n
    }

    /// The next document of an essential list, `None` when they are all done.
    #[inline]
    fn next_doc(&self) -> Option<u32> {
        self.terms[self.essential..]
            .iter()
            .filter(|t| !t.cursor.done())
            .map(|t| t.cursor.rec)
            .min()
    }

    /// Bounds document `doc` at threshold `theta` and scores it exactly if it may reach
    /// it; `None` when it cannot.
    #[inline]
    fn visit(
        &mut self,
        doc: u32,
        theta: f64,
        index: &SegmentIndex<'_>,
        ctx: &ScoreContext<'_>,
    ) -> Result<Option<Scored>, DecodeError> {
        let mut v = self.mark_essential(doc);
        let alive = self.bound_without_lengths(&mut v, theta, index, ctx)
            && self.seek_non_essential(&mut v, theta, index, ctx)?;
        Ok(alive.then(|| {
            let mut scored = self.score_exact(doc, &index.view, ctx);
            scored.phrase = v.phrase;
            scored
        }))
    }

    /// Marks the essential terms at `doc`.
    #[inline]
    fn mark_essential(&mut self, doc: u32) -> Visit {
        let mut v = Visit {
            doc,
            found_words: 0,
            absent: 0,
            tf_sum: 0.0,
            phrase: None,
        };
        for (j, t) in self.terms.iter().enumerate().skip(self.essential) {
            if !t.cursor.done() && t.cursor.rec == doc {
                self.at_doc |= 1u64 << j;
                v.found_words |= t.words;
            } else {
                v.absent |= 1u64 << j;
            }
        }
        v
    }

    /// The bounds read without the document's lengths: the essential terms' at their tf
    /// with their blocks' least lengths, and the blocks of the non-essential ones that
    /// would hold the document. Whether they reach `theta` (with the phrase boost only
    /// where the document's phrase-pair filter allows the phrase).
    #[inline]
    fn bound_without_lengths(
        &mut self,
        v: &mut Visit,
        theta: f64,
        index: &SegmentIndex<'_>,
        ctx: &ScoreContext<'_>,
    ) -> bool {
        let (rest_sum, rest_words) = match self.rest_memo {
            Some((e, a, known)) if e == self.essential && a == v.absent => known,
            _ => {
                let known = self.bounds.rest(self.essential, v.absent);
                self.rest_memo = Some((self.essential, v.absent, known));
                known
            }
        };
        let possible = v.found_words | rest_words;
        if theta == f64::NEG_INFINITY {
            return true;
        }
        for (j, t) in self.terms.iter_mut().enumerate().skip(self.essential) {
            if self.at_doc & (1u64 << j) != 0 {
                v.tf_sum += t.tf_bound(ctx);
            }
        }
        // The essential terms alone reach θ even without the phrase boost.
        if v.tf_sum * ctx.factor_without_phrase(possible) >= theta {
            return true;
        }
        // Both bound the non-essential terms: their blocks' bounds, or their lists'
        // without those of terms known absent.
        let ne = self.non_essential_block_bounds(v.doc, ctx);
        v.reaches(v.tf_sum + ne.min(rest_sum), possible, theta, ctx, index)
    }

    /// The non-essential terms' bounds at the blocks that would hold `doc`, summed (read
    /// from metas without decoding; kept until the walk passes the last record of one of
    /// those blocks or the split moves).
    #[inline]
    fn non_essential_block_bounds(&mut self, doc: u32, ctx: &ScoreContext<'_>) -> f64 {
        match self.ne_bounds {
            Some((sum_for, until, sum)) if sum_for == self.essential && doc <= until => sum,
            _ => {
                let (mut sum, mut until) = (0.0, u32::MAX);
                for t in &mut self.terms[..self.essential] {
                    let (bound, last) = t.bound_for(doc, ctx);
                    sum += bound;
                    until = until.min(last);
                }
                self.ne_bounds = Some((self.essential, until, sum));
                sum
            }
        }
    }

    /// Seeks each non-essential list, highest bound first, to the document and bounds it
    /// at its tf there with its block's least lengths: a document lacking words it cannot
    /// do without dies before its lengths are read (a random read). Whether the document
    /// still may reach `theta`.
    #[inline]
    fn seek_non_essential(
        &mut self,
        v: &mut Visit,
        theta: f64,
        index: &SegmentIndex<'_>,
        ctx: &ScoreContext<'_>,
    ) -> Result<bool, DecodeError> {
        for j in (0..self.essential).rev() {
            let t = &mut self.terms[j];
            // A term whose required term is absent is too: no seek.
            let at = !self.bounds.requirement_absent(j, v.absent)
                && t.cursor.seek(v.doc)?
                && t.cursor.rec == v.doc;
            if at {
                self.at_doc |= 1u64 << j;
                v.tf_sum += t.tf_bound(ctx);
                v.found_words |= t.words;
            } else {
                v.absent |= 1u64 << j;
            }
            let (rest_sum, rest_words) = self.bounds.rest(j, v.absent);
            let alive = v.reaches(
                v.tf_sum + rest_sum,
                v.found_words | rest_words,
                theta,
                ctx,
                index,
            );
            if !alive {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Scores document `doc` exactly from its lengths: the same sums, in query-term order,
    /// that an exhaustive pass makes.
    #[inline]
    fn score_exact(
        &mut self,
        doc: u32,
        view: &TextIndexView<'_>,
        ctx: &ScoreContext<'_>,
    ) -> Scored {
        let lens = view.doc_len(doc as usize);
        let scale = tf_scale(ctx.weights, &lens, &ctx.avg);
        let mut acc = Accumulator::default();
        for (t, slot) in self.slot_of.iter().enumerate() {
            if let Some(j) = *slot
                && self.at_doc & (1u64 << j) != 0
            {
                let tf = &self.terms[j].cursor.tf;
                let parts = term_fields_scaled(ctx.weight_idf(t), tf, &scale);
                acc.add_parts(&ctx.terms[t], parts, tf);
            }
        }
        Scored {
            acc,
            phrase: None,
            len: lens.iter().map(|&l| u64::from(l)).sum(),
        }
    }

    /// Moves the essential cursors at `doc` past it; the next document is one of theirs:
    /// its lengths start loading now, and those of a document a few postings on (a random
    /// read each).
    #[inline]
    fn step_past(&mut self, doc: u32, view: &TextIndexView<'_>) -> Result<(), DecodeError> {
        self.at_doc = 0;
        for t in &mut self.terms[self.essential..] {
            if !t.cursor.done() && t.cursor.rec == doc && t.cursor.advance()? {
                view.prefetch_doc_len(t.cursor.rec as usize);
                if let Some(later) = t.cursor.ahead(PREFETCH_AHEAD) {
                    view.prefetch_doc_len(later as usize);
                }
            }
        }
        Ok(())
    }
}
