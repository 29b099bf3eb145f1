//! Phrase checks: whether a text holds a query's phrase (its words and bigrams, stop
//! words included, consecutively), decided on the stored text since the index keeps no
//! positions; and a cheap necessary condition read off the raw text first.

use super::analyze::{self, Analyzer, TermKind};
#[cfg(any(test, feature = "internals"))]
use super::field_texts;
#[cfg(any(test, feature = "internals"))]
use crate::format::text::TEXT_FIELDS;
#[cfg(any(test, feature = "internals"))]
use crate::model::Node;

/// Whether some field of `node` holds `phrase` (≥ 2 units) as consecutive words/bigrams.
#[cfg(any(test, feature = "internals"))]
pub fn has_phrase(analyzer: &Analyzer, node: &Node, phrase: &[String]) -> bool {
    has_phrase_in(analyzer, node, phrase, [true; TEXT_FIELDS])
}

/// [`has_phrase`] over the fields `fields` selects only (the others are not analyzed).
#[cfg(any(test, feature = "internals"))]
pub fn has_phrase_in(
    analyzer: &Analyzer,
    node: &Node,
    phrase: &[String],
    fields: [bool; TEXT_FIELDS],
) -> bool {
    if phrase.len() < 2 || !fields.contains(&true) {
        return false;
    }
    field_texts(node)
        .iter()
        .zip(fields)
        .any(|(text, on)| on && text_has_phrase(analyzer, text, phrase))
}

/// Whether `text` holds `phrase` (≥ 2 units) as consecutive words/bigrams: its units (the
/// tokens that are not whole identifiers, in text order) hold `phrase` as a window.
/// Streams the tokens through a [`PhraseMatcher`] and stops at the first match; no
/// allocation per token.
#[cfg(any(test, feature = "internals"))]
pub fn text_has_phrase(analyzer: &Analyzer, text: &str, phrase: &[String]) -> bool {
    phrase.len() >= 2 && phrase_may_occur(text, phrase) && units_hold(analyzer, text, phrase)
}

/// `text_has_phrase` without its pre-check (for a caller that made it already).
pub(crate) fn units_hold(analyzer: &Analyzer, text: &str, phrase: &[String]) -> bool {
    let mut m = PhraseMatcher::new(phrase);
    analyzer.for_each_token_until(text, |kind, unit| kind != TermKind::Whole && m.push(unit))
}

/// Knuth–Morris–Pratt over a phrase's units: fed a text's units one at a time, says when
/// the last `phrase.len()` of them equal the phrase.
struct PhraseMatcher<'p> {
    phrase: &'p [String],
    /// `fail[i]`: the length of the longest proper prefix of `phrase[..=i]` that is also
    /// its suffix.
    fail: Vec<usize>,
    /// How many of the phrase's first units the units fed last equal.
    matched: usize,
}

impl<'p> PhraseMatcher<'p> {
    fn new(phrase: &'p [String]) -> PhraseMatcher<'p> {
        let mut fail = vec![0; phrase.len()];
        let mut k = 0;
        for i in 1..phrase.len() {
            while k > 0 && phrase[i] != phrase[k] {
                k = fail[k - 1];
            }
            if phrase[i] == phrase[k] {
                k += 1;
            }
            fail[i] = k;
        }
        PhraseMatcher {
            phrase,
            fail,
            matched: 0,
        }
    }

    /// Feeds the text's next unit; whether the phrase ends with it.
    #[inline]
    fn push(&mut self, unit: &str) -> bool {
        let (phrase, fail) = (self.phrase, &self.fail);
        if phrase.is_empty() {
            return false;
        }
        let mut k = self.matched;
        if k == phrase.len() {
            k = fail[k - 1];
        }
        while k > 0 && phrase[k] != unit {
            k = fail[k - 1];
        }
        if phrase[k] == unit {
            k += 1;
        }
        self.matched = k;
        k == phrase.len()
    }
}

/// A cheap necessary condition for `text_has_phrase`, `true` when unsure: a phrase of
/// ASCII lowercase letters and digits can only occur where its units appear in order,
/// ASCII case aside, separated by characters that are not ASCII letters or digits.
///
/// Why: every alphanumeric character of a text lies in a unit (a Unicode word, or a part
/// of one, or a CJK bigram) unless a longer unit was cut at [`analyze::TERM_BYTES_MAX`],
/// and a phrase unit is shorter than that; so nothing alphanumeric lies between two
/// consecutive units. A unit equal to a phrase unit is the lowercase of a piece of text
/// that, lowercased, is ASCII: that piece is ASCII itself (and equal to the unit but for
/// ASCII case) unless it holds a non-ASCII character whose lowercase holds an ASCII one
/// (the Kelvin sign, `K` → `k`): a text holding such a character is answered `true`.
/// Non-ASCII letters between two units are skipped like punctuation, which can only add
/// false positives.
#[cfg(any(test, feature = "internals"))]
pub fn phrase_may_occur(text: &str, phrase: &[String]) -> bool {
    Precheck::new(phrase).may_occur(text)
}

/// `phrase_may_occur` for one phrase, prepared once for the many texts of a query.
pub(crate) struct Precheck<'p> {
    phrase: &'p [String],
    /// The unit the search anchors at (the longest, the first of equal ones: its
    /// occurrences are the fewest to verify); `None` when the phrase is not of ASCII
    /// lowercase letters and digits, or empty (every text may hold it).
    anchor: Option<usize>,
}

impl<'p> Precheck<'p> {
    pub(crate) fn new(phrase: &'p [String]) -> Precheck<'p> {
        let plain = |u: &String| {
            !u.is_empty()
                && u.len() < analyze::TERM_BYTES_MAX
                && u.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        };
        let anchor = if phrase.iter().all(plain) {
            phrase
                .iter()
                .enumerate()
                .max_by(|x, y| x.1.len().cmp(&y.1.len()).then(y.0.cmp(&x.0)))
                .map(|(a, _)| a)
        } else {
            None
        };
        Precheck { phrase, anchor }
    }

    /// Whether the phrase may occur in `text` (see `phrase_may_occur`).
    pub(crate) fn may_occur(&self, text: &str) -> bool {
        let Some(a) = self.anchor else {
            return true;
        };
        if !text.is_ascii() && lowercases_to_ascii(text) {
            return true;
        }
        let Some(anchor) = self.phrase.get(a) else {
            return true;
        };
        let t = text.as_bytes();
        let mut from = 0;
        while let Some(i) = find_folded(t, anchor.as_bytes(), from) {
            if units_around(t, i, self.phrase, a) {
                return true;
            }
            from = i + 1;
        }
        false
    }
}

/// Whether `unit` (ASCII lowercase) is at `t[i..]`, ASCII case aside.
#[inline]
fn unit_at(t: &[u8], i: usize, unit: &[u8]) -> bool {
    t.get(i..i.saturating_add(unit.len()))
        .is_some_and(|s| s.eq_ignore_ascii_case(unit))
}

/// Whether `phrase[a]` is at `t[i..]` and the units before and after it lie right before
/// and after it in `t`, separated by characters that are not ASCII letters or digits.
fn units_around(t: &[u8], i: usize, phrase: &[String], a: usize) -> bool {
    let Some(anchor) = phrase.get(a) else {
        return false;
    };
    if !unit_at(t, i, anchor.as_bytes()) {
        return false;
    }
    let mut j = i + anchor.len();
    for unit in phrase.get(a + 1..).unwrap_or(&[]) {
        while t.get(j).is_some_and(|b| !b.is_ascii_alphanumeric()) {
            j += 1;
        }
        if !unit_at(t, j, unit.as_bytes()) {
            return false;
        }
        j += unit.len();
    }
    // `end`: where the unit before ends (exclusive).
    let mut end = i;
    for unit in phrase.get(..a).unwrap_or(&[]).iter().rev() {
        while end > 0 && t.get(end - 1).is_some_and(|b| !b.is_ascii_alphanumeric()) {
            end -= 1;
        }
        let Some(start) = end.checked_sub(unit.len()) else {
            return false;
        };
        if !unit_at(t, start, unit.as_bytes()) {
            return false;
        }
        end = start;
    }
    true
}

/// The first position `i` at or after `from` where `t[i..]` may start with `unit` (ASCII
/// lowercase letters and digits, not empty), ASCII case aside: its first two bytes match
/// with bit 0x20 set (`b | 0x20 == c`, which for a digit also accepts a control
/// character: the caller compares the whole unit anyway). Eight positions at a time.
#[inline]
fn find_folded(t: &[u8], unit: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOWS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let c0 = *unit.first()?;
    // A unit of one byte: its second byte may be anything.
    let c1 = unit.get(1).copied();
    let fold = ONES * 0x20;
    let word = |i: usize| {
        t.get(i..i + 8)
            .and_then(|c| c.try_into().ok())
            .map(u64::from_le_bytes)
    };
    // Bit 7 of each byte of the answer set where that byte of `w | 0x20` equals `c`
    // (exactly: no borrow crosses bytes).
    let equal = |w: u64, c: u8| {
        let x = (w | fold) ^ (ONES * u64::from(c));
        !((((x & LOWS) + LOWS) | x) | LOWS)
    };
    let mut i = from;
    // Whole words only, and for a second byte the word one byte on too: the last
    // positions are left to the byte-wise search below.
    let width = if c1.is_some() { 9 } else { 8 };
    while i + width <= t.len()
        && let Some(w0) = word(i)
    {
        let mut hits = equal(w0, c0);
        if let Some(c1) = c1 {
            // The bytes after each of the eight.
            hits &= word(i + 1).map_or(0, |w1| equal(w1, c1));
        }
        if hits != 0 {
            return Some(i + (hits.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    t.get(i..)?
        .iter()
        .position(|&b| b | 0x20 == c0)
        .map(|p| i + p)
}

/// The non-ASCII characters whose lowercase holds an ASCII character (`İ` → `i̇`, the
/// Kelvin sign → `k`): a test checks every character against this list.
const LOWERCASE_TO_ASCII: [char; 2] = ['\u{130}', '\u{212a}'];

/// Whether some non-ASCII character of `text` lowercases to something holding an ASCII
/// character: a search for [`LOWERCASE_TO_ASCII`] (decoding every character of a text
/// and lowercasing it cost more than the rest of the pre-check).
fn lowercases_to_ascii(text: &str) -> bool {
    text.contains(LOWERCASE_TO_ASCII)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`LOWERCASE_TO_ASCII`] lists exactly the characters whose lowercase holds an
    /// ASCII character (with this build's Unicode tables).
    #[test]
    fn lowercase_to_ascii_lists_every_such_character() {
        let found: Vec<String> = (0x80..=0x10ffff_u32)
            .filter_map(char::from_u32)
            .filter(|c| c.to_lowercase().any(|l| l.is_ascii()))
            .map(String::from)
            .collect();
        let listed: Vec<String> = LOWERCASE_TO_ASCII
            .iter()
            .map(|&c| String::from(c))
            .collect();
        assert_eq!(found, listed);
        for c in &listed {
            assert!(lowercases_to_ascii(&format!("a {c} b")));
        }
        assert!(!lowercases_to_ascii("Å § · é — 連線池 K"));
    }

    /// The pre-check as first written: every position tried for the first unit, the
    /// others matched forward from it.
    fn may_occur_naive(t: &[u8], phrase: &[&str]) -> bool {
        let at = |i: usize, u: &str| unit_at(t, i, u.as_bytes());
        (0..t.len()).any(|i| {
            let mut j = i;
            phrase.iter().enumerate().all(|(k, u)| {
                if k > 0 {
                    while t.get(j).is_some_and(|b| !b.is_ascii_alphanumeric()) {
                        j += 1;
                    }
                }
                let ok = at(j, u);
                j += u.len();
                ok
            })
        })
    }

    /// The anchored, word-at-a-time pre-check answers as the naive one over ASCII texts
    /// of the phrases' letters in both cases, digits, punctuation and control bytes.
    #[test]
    fn anchored_precheck_equals_the_naive_one() {
        let phrases: [&[&str]; 5] = [
            &["ab", "b"],
            &["a", "ab", "ba"],
            &["b1", "a"],
            &["bab", "ab", "b"],
            &["1", "a1"],
        ];
        let alphabet = b"aAbB1 ,-\x11\x10";
        let mut seed = 11u64;
        let mut agreed_yes = 0;
        for n in 0..6000 {
            let len = n % 40;
            let text: String = (0..len)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    char::from(alphabet[(seed >> 33) as usize % alphabet.len()])
                })
                .collect();
            for p in phrases {
                let owned: Vec<String> = p.iter().map(|s| (*s).to_owned()).collect();
                let want = may_occur_naive(text.as_bytes(), p);
                assert_eq!(phrase_may_occur(&text, &owned), want, "{text:?} {p:?}");
                agreed_yes += usize::from(want);
            }
        }
        assert!(
            agreed_yes > 1000,
            "too few texts hold a phrase: {agreed_yes}"
        );
    }

    #[test]
    fn matcher_finds_overlapping_phrases() {
        let a = Analyzer::new();
        let p: Vec<String> = ["a", "a", "b"].iter().map(|s| (*s).to_owned()).collect();
        assert!(text_has_phrase(&a, "a a a b", &p));
        assert!(!text_has_phrase(&a, "a b a a", &p));
        let p: Vec<String> = ["x", "y", "x", "z"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert!(text_has_phrase(&a, "x y x y x z", &p));
        assert!(!text_has_phrase(&a, "x y x y z", &p));
    }
}
