//! Text analysis: the one place that turns text into index terms, used alike for stored
//! fields and for queries (so both sides always agree).
//!
//! A text is cut at whitespace into *chunks*. Within a chunk:
//! - runs of CJK characters (Han, Hiragana, Katakana, Hangul) become overlapping character
//!   bigrams (a run of one character is itself a term);
//! - the rest is segmented into words by Unicode word boundaries (UAX #29,
//!   `unicode-segmentation`), so punctuation is never part of a term;
//! - each word is lowercased; a word that joins parts with `_`, `.` or `-`, or that changes
//!   case inside (`camelCase`, `HTTPServer`), is kept whole *and* split into its parts;
//! - a chunk that joins several words with connectors (`kebab-case`, `src/db/open.rs`,
//!   `a::b`) is also kept whole (punctuation trimmed from its ends).
//!
//! Every plain word yields two terms: its exact (lowercased) form and its Snowball English
//! stem, in separate namespaces ([`TermKind`]), so an exact match can rank above a
//! stem-only one. A whole identifier of letters and digits (`camelCase`), or of such parts
//! joined by `_` or `-` (`snake_case`, `kebab-case`), is also indexed by the stem of its
//! joined form ([`stem_source`]: `readOnly`, `read_only` and `read-only` all by
//! `~readon`), since other texts write the name in another convention or as one word;
//! other whole identifiers (`src/db/open.rs`, `v2.3.1`) and bigrams are exact terms only.
//! Stop words are indexed like any word; [`is_stop_word`] lets a query ignore them.
//!
//! Limits: a term longer than [`TERM_BYTES_MAX`] bytes is cut to that length at a character
//! boundary (so two very long words sharing their first 64 bytes match each other).

use std::collections::HashMap;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

/// Longest term in bytes; longer tokens are truncated at a character boundary.
pub const TERM_BYTES_MAX: usize = 64;

/// Namespace byte of an exact (lowercased, unstemmed) term.
pub const EXACT: u8 = b'=';
/// Namespace byte of a stemmed term.
pub const STEM: u8 = b'~';

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TermKind {
    /// A word (or identifier part): indexed exact and stemmed; a unit of phrases.
    Word,
    /// A CJK character bigram (or a lone CJK character): exact only; a unit of phrases.
    Bigram,
    /// A whole identifier or connected chunk (`snake_case`, `src/db/open.rs`): exact only.
    Whole,
}

/// One token of a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// Lowercased text, at most [`TERM_BYTES_MAX`] bytes.
    pub text: String,
    /// What it is.
    pub kind: TermKind,
    /// Byte offset of the token's start in the analyzed text.
    pub start: usize,
    /// Byte offset of the token's end in the analyzed text (`start` plus the length of
    /// the text it was made of, before lowercasing and truncation).
    pub end: usize,
}

impl Token {
    /// A token to fill in (no text, at offset 0).
    fn empty() -> Token {
        Token {
            text: String::new(),
            kind: TermKind::Word,
            start: 0,
            end: 0,
        }
    }

    /// Whether the token is also indexed by a stem: a word with a letter, or a whole
    /// identifier of letters and digits, `_` and `-` with a letter (`camelCase`,
    /// `HTTPServer`, `snake_case`, `kebab-case`), by the stem of its joined form
    /// ([`stem_source`]: `workerPoolSpecs` and `worker_pool_specs` share the stem of
    /// `workerpoolspec`).
    pub fn is_stemmed(&self) -> bool {
        is_stemmed(self.kind, &self.text)
    }

    /// The exact-namespace term of this token.
    pub fn exact_term(&self) -> Vec<u8> {
        term(EXACT, &self.text)
    }
}

/// A namespaced term: the namespace byte, then the text.
pub fn term(namespace: u8, text: &str) -> Vec<u8> {
    let mut t = Vec::with_capacity(text.len() + 1);
    t.push(namespace);
    t.extend_from_slice(text.as_bytes());
    t
}

/// Splits texts into tokens and stems words. Cheap to create (no allocation until the
/// first stem); remembers the stems it computed, up to [`STEM_CACHE_MAX`] words, since
/// word frequencies are Zipfian and Snowball stemming was a fifth of a bulk load's time.
/// Not `Sync`: one per thread.
pub struct Analyzer {
    stemmer: Stemmer,
    cache: std::cell::RefCell<HashMap<Box<str>, Box<str>, foldhash::fast::RandomState>>,
}

/// Most words an [`Analyzer`] remembers stems of; the memo starts over when full.
pub const STEM_CACHE_MAX: usize = 65_536;

impl Default for Analyzer {
    fn default() -> Analyzer {
        Analyzer::new()
    }
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Analyzer(english)")
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F) // CJK Extensions B.. and supplement
}

/// Cuts `s` to at most [`TERM_BYTES_MAX`] bytes at a character boundary.
fn truncate(s: &str) -> &str {
    if s.len() <= TERM_BYTES_MAX {
        return s;
    }
    let mut end = TERM_BYTES_MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `s` lowercased and cut to [`TERM_BYTES_MAX`] bytes ([`truncate`]) into `out` (cleared
/// first): no allocation once `out` has grown, and ASCII (most text) lowercased in place
/// without decoding.
fn lower_into(s: &str, out: &mut String) {
    out.clear();
    if s.is_ascii() {
        out.push_str(s);
        out.make_ascii_lowercase();
    } else {
        out.push_str(&s.to_lowercase());
    }
    let keep = truncate(out).len();
    out.truncate(keep);
}

/// A piece of text that becomes a token: its kind, byte offset and original (not yet
/// lowercased) text.
type PieceSink<'s> = dyn FnMut(TermKind, usize, &str) + 's;

/// The word's other grammatical number by the plain `-s` rule, for query expansion where
/// the stemmer keeps singular and plural apart (`mpis` / `mpi`, `focu` / `focus`):
/// without a final `s` if it has one (not `ss`, at least 4 bytes), else with an `s`
/// added (at least 3 bytes, ending in a letter). `None` when neither applies.
pub fn other_number(word: &str) -> Option<String> {
    if let Some(singular) = word.strip_suffix('s') {
        return (word.len() >= 4 && !singular.ends_with('s')).then(|| singular.to_owned());
    }
    (word.len() >= 3 && word.ends_with(char::is_alphabetic)).then(|| format!("{word}s"))
}

/// Whether `c` joins the parts of a word (`snake_case`, `a.b`, `kebab-case`, `it's`, `a::b`).
fn is_joiner(c: char) -> bool {
    matches!(c, '_' | '.' | '-' | '\'' | '’' | ':')
}

/// The non-empty segments of a word between joiners, with their byte offsets.
fn separated_segments(word: &str) -> impl Iterator<Item = (usize, &str)> {
    let base = word.as_ptr() as usize;
    word.split(is_joiner)
        .filter(|s| !s.is_empty())
        // Each segment is a sub-slice of `word`, so this is its byte offset.
        .map(move |s| (s.as_ptr() as usize - base, s))
}

/// Whether `word` is one part as [`word_parts`] splits it (most words): no joiner, and
/// no upper-case character after the first (every split at a case change is before an
/// upper-case character).
fn is_one_part(word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    if word.is_ascii() {
        let b = word.as_bytes();
        return !b.iter().any(|&c| is_joiner(char::from(c)))
            && !b[1..].iter().any(u8::is_ascii_uppercase);
    }
    !word.contains(is_joiner) && !word.chars().skip(1).any(char::is_uppercase)
}

/// The parts of a word at `_`, `.`, `-`, `'` and inner case changes (`camelCase` →
/// `camel`, `Case`; `HTTPServer` → `HTTP`, `Server`; but `APIs` stays whole), with their
/// byte offsets.
fn word_parts(word: &str) -> Vec<(usize, &str)> {
    if is_one_part(word) {
        return vec![(0, word)];
    }
    split_word_parts(word)
}

/// [`word_parts`] the long way, for any word.
fn split_word_parts(word: &str) -> Vec<(usize, &str)> {
    let mut parts = Vec::new();
    let mut start: Option<usize> = None;
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    for (i, &(at, c)) in chars.iter().enumerate() {
        if is_joiner(c) {
            if let Some(s) = start.take() {
                parts.push((s, &word[s..at]));
            }
            continue;
        }
        if let Some(s) = start {
            let prev = chars.get(i.wrapping_sub(1)).map(|x| x.1);
            let next = chars.get(i + 1).map(|x| x.1);
            let lower_to_upper = prev.is_some_and(char::is_lowercase) && c.is_uppercase();
            // An acronym's plural `s` (`APIs`, `URLs`, `MPIsReady`) is not a new word.
            let after_next = chars.get(i + 2).map(|x| x.1);
            let plural_s =
                next == Some('s') && after_next.is_none_or(|a| a.is_uppercase() || is_joiner(a));
            let acronym_end = prev.is_some_and(char::is_uppercase)
                && c.is_uppercase()
                && next.is_some_and(char::is_lowercase)
                && !plural_s;
            if lower_to_upper || acronym_end {
                parts.push((s, &word[s..at]));
                start = Some(at);
            }
        } else {
            start = Some(at);
        }
    }
    if let Some(s) = start {
        parts.push((s, &word[s..]));
    }
    parts
}

impl Analyzer {
    /// An English analyzer.
    pub fn new() -> Analyzer {
        Analyzer {
            stemmer: Stemmer::create(Algorithm::English),
            cache: Default::default(),
        }
    }

    /// The stem of a lowercased word: its Snowball English stem, except that a plural `s`
    /// the Snowball rules keep because no vowel precedes it (`sdks`, `gpls`, `cpus`,
    /// `whys`) is dropped before stemming, as the original Porter stemmer does: technical
    /// text is full of acronyms and identifiers whose plurals must meet their singulars.
    /// Endings `ss`, `is` and `us` after a vowel (`class`, `this`, `focus`, `status`) stay.
    pub fn stem(&self, word: &str) -> String {
        let mut out = Vec::new();
        self.push_stem(word, &mut out);
        // `push_stem` appends the bytes of a `str`.
        String::from_utf8(out).unwrap_or_default()
    }

    /// Appends the stem of `word` to `out` (no allocation when the stem is remembered).
    fn push_stem(&self, word: &str, out: &mut Vec<u8>) {
        if let Some(stem) = self.cache.borrow().get(word) {
            out.extend_from_slice(stem.as_bytes());
            return;
        }
        let stem = self.stem_uncached(word);
        out.extend_from_slice(stem.as_bytes());
        let mut cache = self.cache.borrow_mut();
        if cache.len() >= STEM_CACHE_MAX {
            cache.clear();
        }
        cache.insert(word.into(), stem.into());
    }

    fn stem_uncached(&self, word: &str) -> String {
        let stem = self.stemmer.stem(word);
        if stem == word
            && let Some(singular) = word.strip_suffix('s')
            && singular.len() >= 2
            && !singular.ends_with(['s', 'i'])
            && !singular
                .strip_suffix('u')
                .is_some_and(|head| head.contains(['a', 'e', 'i', 'o', 'u', 'y']))
        {
            return truncate(&self.stemmer.stem(singular)).to_owned();
        }
        truncate(&stem).to_owned()
    }

    /// The tokens of `text` in text order (a whole identifier comes right before its
    /// parts). Cost: O(text length).
    pub fn tokens(&self, text: &str) -> Vec<Token> {
        let mut out = Vec::new();
        self.find_token(text, |t| {
            out.push(t.clone());
            false
        });
        out
    }

    /// The first token of `text` (in [`Analyzer::tokens`] order) that `pred` accepts.
    /// Analyzes whitespace-separated chunk by chunk and stops at the first chunk holding
    /// one: O(length of text up to the match).
    pub fn find_token(&self, text: &str, mut pred: impl FnMut(&Token) -> bool) -> Option<Token> {
        let mut tok = Token::empty();
        let base = text.as_ptr() as usize;
        for chunk in text.split(char::is_whitespace).filter(|c| !c.is_empty()) {
            // `chunk` is a sub-slice of `text`, so this is its byte offset.
            let at = chunk.as_ptr() as usize - base;
            if first_in_chunk(chunk, at, &mut tok, &mut pred) {
                return Some(tok);
            }
        }
        None
    }

    /// As [`Analyzer::find_token`], analysing only the chunks that `hint` points into:
    /// `hint(pos)` is the least byte offset ≥ `pos` at which an accepted token may lie
    /// (`None`: none after `pos`). Exactly `find_token`'s answer when every chunk holding
    /// a token `pred` accepts holds an offset the hints give; cost O(chunks analysed) plus
    /// whatever the hints cost.
    pub fn find_token_hinted(
        &self,
        text: &str,
        mut hint: impl FnMut(usize) -> Option<usize>,
        mut pred: impl FnMut(&Token) -> bool,
    ) -> Option<Token> {
        let mut tok = Token::empty();
        let mut pos = 0usize;
        while let Some(at) = hint(pos) {
            let at = at.max(pos);
            if at >= text.len() || !text.is_char_boundary(at) {
                return None;
            }
            // The whitespace-separated chunk holding `at`, as `find_token` splits them.
            let start = text[..at]
                .char_indices()
                .rev()
                .find(|&(_, c)| c.is_whitespace())
                .map_or(0, |(i, c)| i + c.len_utf8());
            let end = text[at..]
                .find(char::is_whitespace)
                .map_or(text.len(), |i| at + i);
            if start < end && first_in_chunk(&text[start..end], start, &mut tok, &mut pred) {
                return Some(tok);
            }
            pos = end.max(at + 1);
        }
        None
    }

    /// Calls `f` with every index term of `text` (namespaced, see [`term`]): a word's
    /// exact form and stem, a whole identifier's or bigram's exact form, in
    /// [`Analyzer::tokens`] order (a token's stem before its exact form).
    /// The term's bytes live in a buffer reused from call to call: copy what you keep.
    /// Allocates nothing per token once its buffers have grown (a bulk load's analysis
    /// is mostly this).
    #[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))] // tests' reference
    pub fn for_each_term(&self, text: &str, mut f: impl FnMut(&[u8])) {
        let mut buf = Vec::new();
        self.for_each_token(text, |kind, low| {
            if is_stemmed(kind, low) {
                buf.clear();
                self.push_stem_term(&stem_source(kind, low), &mut buf);
                f(&buf);
            }
            buf.clear();
            buf.push(EXACT);
            buf.extend_from_slice(low.as_bytes());
            f(&buf);
        });
    }

    /// Calls `f` with the kind and text (lowercased, as [`Token::text`]) of every token
    /// of `text`, in [`Analyzer::tokens`] order, the text in a buffer reused from call to
    /// call: no allocation per token.
    pub fn for_each_token(&self, text: &str, mut f: impl FnMut(TermKind, &str)) {
        self.for_each_token_until(text, |kind, low| {
            f(kind, low);
            false
        });
    }

    /// As [`Analyzer::for_each_token`] until `f` answers `true`: the rest of the
    /// whitespace-separated chunk holding that token is still cut into pieces (and not
    /// passed on), no later chunk is read. Whether `f` answered `true`.
    pub fn for_each_token_until(
        &self,
        text: &str,
        mut f: impl FnMut(TermKind, &str) -> bool,
    ) -> bool {
        let mut low = String::new();
        let mut done = false;
        let base = text.as_ptr() as usize;
        for chunk in text.split(char::is_whitespace).filter(|c| !c.is_empty()) {
            // `chunk` is a sub-slice of `text`, so this is its byte offset.
            let at = chunk.as_ptr() as usize - base;
            chunk_pieces(chunk, at, &mut |kind, _, piece| {
                if done {
                    return;
                }
                match kind {
                    TermKind::Bigram => {
                        low.clear();
                        low.push_str(piece);
                    }
                    TermKind::Word | TermKind::Whole => lower_into(piece, &mut low),
                }
                done = f(kind, &low);
            });
            if done {
                return true;
            }
        }
        false
    }

    /// Appends the namespaced stem term of `token` (lowercased) to `out`.
    pub fn push_stem_term(&self, token: &str, out: &mut Vec<u8>) {
        out.push(STEM);
        self.push_stem(token, out);
    }
}

/// Whether a token of `chunk` (a whitespace-free piece of text at byte offset `chunk_at`)
/// is one `pred` accepts; the first such token is left in `tok`. Each token is made in
/// `tok` in turn, its text buffer reused: no allocation per token.
fn first_in_chunk(
    chunk: &str,
    chunk_at: usize,
    tok: &mut Token,
    pred: &mut impl FnMut(&Token) -> bool,
) -> bool {
    let mut found = false;
    chunk_pieces(chunk, chunk_at, &mut |kind, start, piece| {
        if found {
            return;
        }
        match kind {
            TermKind::Bigram => {
                tok.text.clear();
                tok.text.push_str(piece);
            }
            TermKind::Word | TermKind::Whole => lower_into(piece, &mut tok.text),
        }
        tok.kind = kind;
        tok.start = start;
        tok.end = start + piece.len();
        found = pred(tok);
    });
    found
}

/// Whether a token of `kind` and (lowercased) `text` is also indexed by a stem (that of
/// [`stem_source`]): a word with a letter, or a whole identifier of letters, digits, `_`
/// and `-` with a letter (see [`Token::is_stemmed`]).
pub fn is_stemmed(kind: TermKind, text: &str) -> bool {
    match kind {
        TermKind::Word => text.chars().any(char::is_alphabetic),
        TermKind::Whole => {
            text.chars()
                .all(|c| c.is_alphanumeric() || is_name_joiner(c))
                && text.chars().any(char::is_alphabetic)
        }
        TermKind::Bigram => false,
    }
}

/// The joiners of a name's parts that its joined form drops (`read_only`, `read-only`
/// and `readOnly` are all `readonly` joined). Other connectors (`.`, `/`, `:`) make
/// paths, versions and qualified names, which are not one name written another way.
fn is_name_joiner(c: char) -> bool {
    c == '_' || c == '-'
}

/// The text whose stem a token of `kind` and (lowercased) `text` is indexed by, when
/// [`is_stemmed`]: a word itself, a whole identifier joined (its `_` and `-` dropped),
/// so that every naming convention of one name shares a stem term. Since format 12
/// (before, a name with `_` or `-` had no stem term).
pub fn stem_source(kind: TermKind, text: &str) -> std::borrow::Cow<'_, str> {
    if kind == TermKind::Whole && text.contains(is_name_joiner) {
        std::borrow::Cow::Owned(text.chars().filter(|&c| !is_name_joiner(c)).collect())
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Whether every document whose analysis made the exact term of the query word `text`
/// (lowercased) also made its stem term ([`Analyzer::push_stem_term`]) in the same field:
/// true of text of letters and digits with a letter and no CJK character, which analysis
/// stems whether it meets it as a word or as a whole identifier ([`is_stemmed`]) and never
/// makes a bigram of. Searches skip such an exact term's list where its stem is absent;
/// segments analyzed by an earlier analysis need not satisfy it (see
/// [`ANALYSIS_SINCE_FORMAT`](super::ANALYSIS_SINCE_FORMAT)).
pub fn stem_implied(text: &str) -> bool {
    text.chars().all(char::is_alphanumeric)
        && text.chars().any(char::is_alphabetic)
        && !text.chars().any(is_cjk)
}

/// Whether the trimmed chunk `trimmed` joins several words with connectors
/// (`kebab-case`, `src/db/open.rs`, `a::b`), and so is also a token whole.
fn is_connected(trimmed: &str) -> bool {
    // ASCII letters and digits alone are one word by the Unicode rules (WB8–WB10).
    if trimmed.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return false;
    }
    trimmed
        .chars()
        .all(|c| c.is_alphanumeric() || "_-./:\\@#+".contains(c))
        && !trimmed.chars().any(is_cjk)
        && trimmed.unicode_words().nth(1).is_some()
}

/// The pieces of one whitespace-free `chunk` at byte offset `chunk_at`, in token order:
/// the chunk whole when it is connected (see [`is_connected`]), runs of CJK characters
/// as bigrams, the rest as words (see [`words`]). `emit` gets each piece's kind, offset
/// and original text (a bigram's two characters are adjacent, so it too is a slice).
fn chunk_pieces(chunk: &str, chunk_at: usize, emit: &mut PieceSink<'_>) {
    let trimmed = chunk.trim_matches(|c: char| !c.is_alphanumeric());
    if is_connected(trimmed) {
        // `trimmed` is a sub-slice of `chunk`, so this is its byte offset.
        let trim_at = chunk_at + (trimmed.as_ptr() as usize - chunk.as_ptr() as usize);
        emit(TermKind::Whole, trim_at, trimmed);
    }
    if chunk.is_ascii() {
        words(chunk, chunk_at, emit);
        return;
    }
    // Split into CJK runs and the rest.
    let mut rest_start = 0usize;
    // The current CJK run: (offset, length in bytes) of each of its characters.
    let mut run: Vec<(usize, usize)> = Vec::new();
    for (at, c) in chunk.char_indices() {
        if is_cjk(c) {
            if run.is_empty() {
                words(&chunk[rest_start..at], chunk_at + rest_start, emit);
            }
            run.push((at, c.len_utf8()));
            rest_start = at + c.len_utf8();
        } else if !run.is_empty() {
            cjk_bigrams(chunk, chunk_at, &mut run, emit);
        }
    }
    cjk_bigrams(chunk, chunk_at, &mut run, emit);
    words(&chunk[rest_start..], chunk_at + rest_start, emit);
}

/// Emits the CJK `run` of `chunk` (characters as (offset, length)) as overlapping
/// bigrams, or as its one character, and empties it.
fn cjk_bigrams(
    chunk: &str,
    chunk_at: usize,
    run: &mut Vec<(usize, usize)>,
    emit: &mut PieceSink<'_>,
) {
    if let [(at, len)] = run[..] {
        emit(TermKind::Bigram, chunk_at + at, &chunk[at..at + len]);
    }
    for w in run.windows(2) {
        let ((a, _), (b, b_len)) = (w[0], w[1]);
        emit(TermKind::Bigram, chunk_at + a, &chunk[a..b + b_len]);
    }
    run.clear();
}

/// The pieces of CJK-free `text` at byte offset `base`: per Unicode word, the word whole
/// when it has several parts (and each joined segment that itself has several), then
/// each part holding a letter or digit (see [`word_parts`]).
fn words(text: &str, base: usize, emit: &mut PieceSink<'_>) {
    for (at, word) in text.unicode_word_indices() {
        if is_one_part(word) {
            if word.chars().any(char::is_alphanumeric) {
                emit(TermKind::Word, base + at, word);
            }
            continue;
        }
        let parts = word_parts(word);
        if parts.len() > 1 {
            emit(TermKind::Whole, base + at, word);
            // A camelCase segment of a joined word (`tkMain` of `tkMain.c`,
            // `AppendUnicodeToObj` of `Tcl_AppendUnicodeToObj`) is also an identifier
            // of its own that other texts write alone.
            for (s_at, segment) in separated_segments(word) {
                if segment.len() < word.len() && word_parts(segment).len() > 1 {
                    emit(TermKind::Whole, base + at + s_at, segment);
                }
            }
        }
        for (p_at, part) in parts {
            if part.chars().any(char::is_alphanumeric) {
                emit(TermKind::Word, base + at + p_at, part);
            }
        }
    }
}

/// Whether a lowercased word is an English stop word (a query of stop words only finds
/// nothing; stop words in a longer query count only toward the phrase bonus).
pub fn is_stop_word(word: &str) -> bool {
    const STOP: &[&str] = &[
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "had", "has",
        "have", "he", "her", "his", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no",
        "not", "of", "on", "or", "our", "she", "so", "such", "that", "the", "their", "then",
        "there", "these", "they", "this", "to", "was", "we", "were", "what", "when", "which",
        "who", "will", "with", "you", "your",
    ];
    STOP.binary_search(&word).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<(String, TermKind)> {
        Analyzer::new()
            .tokens(s)
            .into_iter()
            .map(|t| (t.text, t.kind))
            .collect()
    }

    fn words(s: &str) -> Vec<String> {
        texts(s)
            .into_iter()
            .filter(|t| t.1 == TermKind::Word)
            .map(|t| t.0)
            .collect()
    }

    fn wholes(s: &str) -> Vec<String> {
        texts(s)
            .into_iter()
            .filter(|t| t.1 == TermKind::Whole)
            .map(|t| t.0)
            .collect()
    }

    /// Text mixing ASCII, case changes, joiners, punctuation, whitespace, accents, CJK
    /// and emoji: what the shortcuts of analysis must agree with the long way on.
    fn mixed_text() -> impl proptest::strategy::Strategy<Value = String> {
        "[a-zA-Z0-9_.:'\\-/#@+,;()\t \n\u{e9}\u{c9}\u{df}\u{130}\u{65e5}\u{672c}\u{30ab}\u{d55c}\u{1f600}]{0,48}"
    }

    proptest::proptest! {
        /// The index terms of a text are exactly those of its tokens: per token its stem
        /// (when stemmed) and its exact form, in order.
        #[test]
        fn terms_are_those_of_the_tokens(text in mixed_text()) {
            let a = Analyzer::new();
            let mut got = Vec::new();
            a.for_each_term(&text, |t| got.push(t.to_vec()));
            let mut want = Vec::new();
            for t in a.tokens(&text) {
                if t.is_stemmed() {
                    want.push(term(STEM, &a.stem(&stem_source(t.kind, &t.text))));
                }
                want.push(t.exact_term());
            }
            proptest::prop_assert_eq!(got, want);
        }

        /// The one-part shortcut of `word_parts` splits as the long way does.
        #[test]
        fn one_part_shortcut_agrees(text in mixed_text()) {
            for word in text.unicode_words() {
                proptest::prop_assert_eq!(word_parts(word), split_word_parts(word));
            }
        }

        /// The ASCII shortcut of `is_connected` answers as the Unicode rules do.
        #[test]
        fn connected_shortcut_agrees(text in mixed_text()) {
            for chunk in text.split(char::is_whitespace) {
                let trimmed = chunk.trim_matches(|c: char| !c.is_alphanumeric());
                let want = trimmed.unicode_words().count() > 1
                    && !trimmed.chars().any(is_cjk)
                    && trimmed
                        .chars()
                        .all(|c| c.is_alphanumeric() || "_-./:\\@#+".contains(c));
                proptest::prop_assert_eq!(is_connected(trimmed), want, "{:?}", trimmed);
            }
        }
    }

    #[test]
    fn stop_list_is_sorted() {
        assert!(is_stop_word("the") && is_stop_word("a") && is_stop_word("your"));
        assert!(!is_stop_word("database"));
    }

    #[test]
    fn case_and_punctuation_never_glue() {
        assert_eq!(
            words("Hello, World! (PostgreSQL)."),
            ["hello", "world", "postgre", "sql"]
        );
        assert_eq!(wholes("(PostgreSQL)."), ["postgresql"]);
        assert_eq!(words("\"quoted\"—dash…end?"), ["quoted", "dash", "end"]);
    }

    #[test]
    fn inflections_share_a_stem() {
        let a = Analyzer::new();
        for (plural, singular) in [
            ("sdks", "sdk"),
            ("gpls", "gpl"),
            ("cpus", "cpu"),
            ("whys", "why"),
            ("pkcs", "pkc"),
            ("focuses", "focus"),
            ("statuses", "status"),
            ("classes", "class"),
            ("apis", "api"),
        ] {
            assert_eq!(a.stem(plural), a.stem(singular), "{plural}");
        }
        assert_eq!(a.stem("this"), "this");
        assert_eq!(a.stem("focus"), "focus");
        assert_eq!(a.stem("running"), a.stem("runs"));
        assert_eq!(a.stem("databases"), a.stem("database"));
        assert_eq!(a.stem("connected"), a.stem("connection"));
    }

    #[test]
    fn identifiers_whole_and_split() {
        assert_eq!(wholes("use snake_case here"), ["snake_case"]);
        assert_eq!(words("snake_case"), ["snake", "case"]);
        assert_eq!(wholes("camelCase"), ["camelcase"]);
        assert_eq!(
            words("camelCase HTTPServer"),
            ["camel", "case", "http", "server"]
        );
        // An acronym's plural is one word, not `AP` + `Is`.
        assert_eq!(words("APIs URLs"), ["apis", "urls"]);
        assert_eq!(words("MPIsReady"), ["mpis", "ready"]);
        assert_eq!(wholes("kebab-case"), ["kebab-case"]);
        assert_eq!(words("kebab-case"), ["kebab", "case"]);
        assert!(wholes("version v2.3.1 out").contains(&"v2.3.1".to_owned()));
        assert_eq!(words("v2.3.1"), ["v2", "3", "1"]);
        let w = wholes("see src/db/open.rs.");
        assert!(w.contains(&"src/db/open.rs".to_owned()), "{w:?}");
        assert!(w.contains(&"open.rs".to_owned()), "{w:?}");
        assert_eq!(words("src/db/open.rs"), ["src", "db", "open", "rs"]);
        // camelCase segments of joined words are identifiers of their own.
        assert_eq!(
            wholes("Tcl_AppendUnicodeToObj(x)"),
            ["tcl_appendunicodetoobj", "appendunicodetoobj"]
        );
        let w = wholes("generic/tkMain.c:");
        assert!(w.contains(&"tkmain".to_owned()), "{w:?}");
        assert_eq!(words("tkMain.c"), ["tk", "main", "c"]);
        // Plain segments are the parts already: no extra whole.
        assert_eq!(wholes("max_hops"), ["max_hops"]);
    }

    /// Every naming convention of one name shares a stem term (the stem of the name
    /// joined), which paths, versions and qualified names do not get.
    #[test]
    fn naming_conventions_share_the_joined_stem() {
        let a = Analyzer::new();
        let stems = |text: &str| -> Vec<String> {
            let mut out = Vec::new();
            a.for_each_term(text, |t| {
                if t[0] == STEM {
                    out.push(String::from_utf8_lossy(&t[1..]).into_owned());
                }
            });
            out
        };
        let joined = a.stem("workerpoolspecs");
        for name in [
            "workerPoolSpecs",
            "worker_pool_specs",
            "worker-pool-specs",
            "WORKER_POOL_SPECS",
            "WorkerPool_specs",
            "workerpoolspecs",
        ] {
            assert!(stems(name).contains(&joined), "{name}: {:?}", stems(name));
        }
        assert_eq!(stem_source(TermKind::Whole, "read_only"), "readonly");
        assert_eq!(stem_source(TermKind::Whole, "read-only"), "readonly");
        assert_eq!(stem_source(TermKind::Word, "readonly"), "readonly");
        // Wholes with other connectors have no stem; their parts do.
        for (text, whole) in [("src/db/open.rs", "src/db/open.rs"), ("v2.3.1", "v2.3.1")] {
            assert!(!is_stemmed(TermKind::Whole, whole), "{text}");
            assert!(
                !stems(text).iter().any(|s| s.contains(['/', '.'])),
                "{text}"
            );
        }
        // A name of digits and joiners only is not a word to stem.
        assert!(!is_stemmed(TermKind::Whole, "2024-01-02"));
        assert!(is_stemmed(TermKind::Whole, "x86_64"));
    }

    #[test]
    fn other_number_adds_or_drops_a_final_s() {
        // The stems it exists for: plurals the stemmer keeps apart from their singulars.
        let a = Analyzer::new();
        assert_ne!(a.stem("mpis"), a.stem("mpi"));
        assert_ne!(a.stem("statu"), a.stem("status"));
        assert_eq!(other_number("mpis").as_deref(), Some("mpi"));
        assert_eq!(other_number("mpi").as_deref(), Some("mpis"));
        assert_eq!(other_number("statu").as_deref(), Some("status"));
        assert_eq!(other_number("class"), None);
        assert_eq!(other_number("gas"), None);
        assert_eq!(other_number("go"), None);
        assert_eq!(other_number("v2"), None);
    }

    #[test]
    fn cjk_becomes_bigrams() {
        let t = texts("数据库索引");
        let b: Vec<&str> = t.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(b, ["数据", "据库", "库索", "索引"]);
        assert!(t.iter().all(|x| x.1 == TermKind::Bigram));
        // Mixed with Latin words, and a lone character.
        let t = texts("hopgraph图 数据");
        let b: Vec<&str> = t.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(b, ["hopgraph", "图", "数据"]);
    }

    #[test]
    fn emoji_are_not_terms_and_split_words() {
        assert_eq!(words("ship it 🚀🚀 now"), ["ship", "it", "now"]);
        assert_eq!(words("hello🎉world"), ["hello", "world"]);
        assert!(texts("🎉🎉").is_empty());
    }

    #[test]
    fn long_tokens_are_truncated_at_char_boundaries() {
        let long = "é".repeat(100);
        let t = texts(&long);
        assert_eq!(t.len(), 1);
        assert!(t[0].0.len() <= TERM_BYTES_MAX && t[0].0.len() >= TERM_BYTES_MAX - 1);
        assert!(t[0].0.chars().all(|c| c == 'é'));
        let a = "x".repeat(5000);
        assert_eq!(texts(&a)[0].0.len(), TERM_BYTES_MAX);
    }

    #[test]
    fn offsets_point_at_the_tokens() {
        let s = "Alpha, beta-gamma 数据";
        for t in Analyzer::new().tokens(s) {
            assert!(s.is_char_boundary(t.start), "{t:?}");
            let tail = s[t.start..].to_lowercase();
            let first = t.text.chars().next().unwrap_or(' ');
            assert!(tail.starts_with(first), "{t:?}");
        }
    }

    #[test]
    fn terms_carry_namespaces() {
        let mut terms = Vec::new();
        Analyzer::new().for_each_term("Running 42", |t| terms.push(t.to_vec()));
        assert!(terms.contains(&term(EXACT, "running")));
        assert!(terms.contains(&term(STEM, "run")));
        assert!(terms.contains(&term(EXACT, "42")));
        assert!(!terms.contains(&term(STEM, "42")));
    }

    #[test]
    fn find_token_is_the_first_match_of_tokens() {
        let a = Analyzer::new();
        let texts = [
            "The tkMain.c file calls Tcl_AppendUnicodeToObj twice; see tkMain again.",
            "数据库 index and v2.3.1 release notes",
            "",
            "   only   spaces   ",
        ];
        let preds: [fn(&Token) -> bool; 4] = [
            |t| t.text == "tkmain",
            |t| t.kind == TermKind::Bigram,
            |t| t.text.starts_with('v'),
            |t| t.text == "absent",
        ];
        for text in texts {
            for pred in preds {
                let want = a.tokens(text).into_iter().find(pred);
                let got = a.find_token(text, pred);
                assert_eq!(
                    got.map(|t| (t.text, t.start)),
                    want.map(|t| (t.text, t.start))
                );
            }
        }
        assert!(a.find_token(texts[0], |t| t.text == "tkmain").is_some());
    }
}
