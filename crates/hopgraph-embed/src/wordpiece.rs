//! BERT WordPiece tokenization, read from a model's `tokenizer.json` (the file Hugging
//! Face's tokenizers library writes), giving the ids that library gives.
//!
//! The steps, in the order the reference applies them:
//! 1. **Special tokens** written literally in the text (`[CLS]`, `[MASK]`, ...: the file's
//!    `added_tokens` with `normalized: false`) are cut out of the raw text first, the
//!    longest match at the leftmost position, and become their own ids.
//! 2. **Normalization** (`BertNormalizer`) of each piece between them: control characters
//!    (Unicode Cc, Cf, Co, except tab, newline, carriage return), NUL and U+FFFD removed and
//!    whitespace made a space (`clean_text`); CJK ideographs surrounded by spaces
//!    (`handle_chinese_chars`); canonical decomposition (NFD) with the non-spacing marks
//!    (Mn) dropped (`strip_accents`, which follows `lowercase` when the file says null);
//!    each character lower-cased on its own (`lowercase`; so a final capital sigma becomes
//!    σ, as in the reference).
//! 3. **Pre-tokenization** (`BertPreTokenizer`): split at whitespace, which goes, and
//!    around every punctuation character (ASCII punctuation or Unicode P*), which stays as
//!    a word of its own.
//! 4. **WordPiece**: each word greedily as the longest vocabulary entry from its start, the
//!    rest as `##`-prefixed continuations; a word with a piece that matches nothing, or
//!    longer than `max_input_chars_per_word` characters, is one unknown token.
//! 5. **Post-processing** (`TemplateProcessing` or `BertProcessing`): `[CLS]` before and
//!    `[SEP]` after; truncation (to the model's window) cuts the words' tokens at the end
//!    before they are added.
//!
//! Character classes come from the tables the reference uses (the `unicode_categories`
//! crate, and `unicode-normalization-alignments` for NFD, both Unicode 9.0), so characters
//! assigned since then are treated as the reference treats them, and the ids equal
//! Python's for every text. `tests/it/tokenizer.rs` checks that against the ids of the
//! real all-MiniLM-L6-v2 tokenizer for ~2,000 varied texts.
//! Anything else in a `tokenizer.json` (BPE or Unigram models, other normalizers or
//! pre-tokenizers, added tokens that are normalized or strip spaces) is refused with a
//! message saying so: the encoders this crate runs are BERT's, and BERT models ship this
//! tokenizer.

use std::collections::HashMap;

use serde_json::Value;
use unicode_categories::UnicodeCategories;
use unicode_normalization_alignments::UnicodeNormalization;

/// A BERT WordPiece tokenizer.
#[derive(Clone, Debug)]
pub(crate) struct WordPiece {
    vocab: HashMap<Box<str>, u32>,
    unk: u32,
    continuation: String,
    max_word_chars: usize,
    normalizer: Option<Normalizer>,
    /// Special tokens matched in the raw text, longest first.
    specials: Vec<(String, u32)>,
    /// Ids put before and after the text's own.
    before: Vec<u32>,
    after: Vec<u32>,
}

/// `BertNormalizer`'s options.
#[derive(Clone, Copy, Debug)]
struct Normalizer {
    clean_text: bool,
    chinese: bool,
    strip_accents: bool,
    lowercase: bool,
}

/// Why a `tokenizer.json` cannot be used (the caller adds the path).
pub(crate) type ParseError = String;

impl WordPiece {
    /// Reads a `tokenizer.json`.
    pub(crate) fn from_json(bytes: &[u8]) -> Result<WordPiece, ParseError> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        check_pre_tokenizer(v.get("pre_tokenizer"))?;
        let model = v.get("model").ok_or("no \"model\"")?;
        let kind = model
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("(none)");
        if kind != "WordPiece" {
            return Err(format!(
                "the tokenizer model is {kind}; hopgraph-embed reads BERT WordPiece tokenizers"
            ));
        }
        let vocab_json = model
            .get("vocab")
            .and_then(Value::as_object)
            .ok_or("the WordPiece model has no \"vocab\" object")?;
        let mut vocab = HashMap::with_capacity(vocab_json.len());
        for (token, id) in vocab_json {
            vocab.insert(token.as_str().into(), as_id(id, token)?);
        }
        let unk_token = str_or(model, "unk_token", "[UNK]");
        let unk = *vocab
            .get(unk_token)
            .ok_or_else(|| format!("the unknown token {unk_token:?} is not in the vocabulary"))?;
        let max_word_chars = model
            .get("max_input_chars_per_word")
            .and_then(Value::as_u64)
            .map_or(100, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let (before, after) = post_processor(v.get("post_processor"))?;
        Ok(WordPiece {
            vocab,
            unk,
            continuation: str_or(model, "continuing_subword_prefix", "##").to_owned(),
            max_word_chars,
            normalizer: normalizer(v.get("normalizer"))?,
            specials: specials(v.get("added_tokens"))?,
            before,
            after,
        })
    }

    /// The number of distinct ids the tokenizer can give (vocabulary and special tokens).
    pub(crate) fn vocab_size(&self) -> usize {
        let mut ids: Vec<u32> = self.vocab.values().copied().collect();
        ids.extend(self.specials.iter().map(|s| s.1));
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }

    /// The ids of `text`, special tokens included, at most `window` of them (`None`: all).
    pub(crate) fn encode(&self, text: &str, window: Option<usize>) -> Vec<u32> {
        let mut ids = self.before.clone();
        let mut words = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let (plain, special) = self.next_special(rest);
            self.push_plain(&rest[..plain], &mut ids, &mut words);
            match special {
                Some((len, id)) => {
                    ids.push(id);
                    rest = &rest[plain + len..];
                }
                None => break,
            }
        }
        if let Some(window) = window {
            let room = window
                .saturating_sub(self.after.len())
                .max(self.before.len());
            ids.truncate(room);
        }
        ids.extend_from_slice(&self.after);
        ids
    }

    /// The byte offset of the leftmost special token in `text` (the text's length when
    /// there is none) and that token's length and id, the longest at that offset.
    fn next_special(&self, text: &str) -> (usize, Option<(usize, u32)>) {
        if self.specials.is_empty() {
            return (text.len(), None);
        }
        for (at, _) in text.char_indices() {
            let tail = &text[at..];
            // Longest first, so the first that matches is the longest.
            if let Some((s, id)) = self.specials.iter().find(|(s, _)| tail.starts_with(s)) {
                return (at, Some((s.len(), *id)));
            }
        }
        (text.len(), None)
    }

    /// Normalizes, splits and word-pieces `text` (no special tokens in it) onto `ids`.
    fn push_plain(&self, text: &str, ids: &mut Vec<u32>, words: &mut Vec<(usize, usize)>) {
        let normalized = match &self.normalizer {
            Some(n) => n.apply(text),
            None => text.to_owned(),
        };
        words.clear();
        split_words(&normalized, words);
        let mut key = String::new();
        for &(start, end) in words.iter() {
            self.push_word(&normalized[start..end], ids, &mut key);
        }
    }

    /// One word's pieces (or the unknown token).
    fn push_word(&self, word: &str, ids: &mut Vec<u32>, key: &mut String) {
        if word.chars().count() > self.max_word_chars {
            ids.push(self.unk);
            return;
        }
        let first = ids.len();
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                key.clear();
                if start > 0 {
                    key.push_str(&self.continuation);
                }
                key.push_str(&word[start..end]);
                if let Some(&id) = self.vocab.get(key.as_str()) {
                    found = Some(id);
                    break;
                }
                end = prev_boundary(word, end);
            }
            match found {
                Some(id) => {
                    ids.push(id);
                    start = end;
                }
                None => {
                    ids.truncate(first);
                    ids.push(self.unk);
                    return;
                }
            }
        }
    }
}

/// The start of the last character before byte `end` (`end > 0`).
fn prev_boundary(s: &str, end: usize) -> usize {
    s[..end].char_indices().next_back().map_or(0, |(i, _)| i)
}

/// The byte ranges of `text`'s words: runs between whitespace, with every punctuation
/// character a word of its own.
fn split_words(text: &str, words: &mut Vec<(usize, usize)>) {
    let mut start = None;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() || is_punctuation(c) {
            if let Some(s) = start.take() {
                words.push((s, i));
            }
            if !c.is_whitespace() {
                words.push((i, i + c.len_utf8()));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        words.push((s, text.len()));
    }
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

impl Normalizer {
    fn apply(&self, text: &str) -> String {
        let mut s = String::with_capacity(text.len());
        for c in text.chars() {
            if self.clean_text {
                if c == '\0' || c == '\u{fffd}' || is_control(c) {
                    continue;
                }
                if is_bert_whitespace(c) {
                    s.push(' ');
                    continue;
                }
            }
            if self.chinese && is_cjk_ideograph(c) {
                s.push(' ');
                s.push(c);
                s.push(' ');
            } else {
                s.push(c);
            }
        }
        if self.strip_accents {
            s = s
                .nfd()
                .map(|(c, _)| c)
                .filter(|c| !c.is_mark_nonspacing())
                .collect();
        }
        if self.lowercase {
            s = s.chars().flat_map(char::to_lowercase).collect();
        }
        s
    }
}

fn is_bert_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// The CJK Unified Ideographs blocks and their extensions A–E, and the compatibility
/// ideographs: the characters BERT's original tokenizer surrounds with spaces.
fn is_cjk_ideograph(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x2_0000..=0x2_A6DF
        | 0x2_A700..=0x2_B73F
        | 0x2_B740..=0x2_B81F
        | 0x2_B920..=0x2_CEAF
        | 0xF900..=0xFAFF
        | 0x2_F800..=0x2_FA1F)
}

fn as_id(v: &Value, what: &str) -> Result<u32, ParseError> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| format!("the id of {what:?} is not a 32-bit unsigned number"))
}

fn str_or<'a>(v: &'a Value, key: &str, default: &'a str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or(default)
}

fn flag(v: &Value, key: &str, default: bool) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(default)
}

fn normalizer(v: Option<&Value>) -> Result<Option<Normalizer>, ParseError> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let kind = str_or(v, "type", "(none)");
    if kind != "BertNormalizer" {
        return Err(format!(
            "the normalizer is {kind}; hopgraph-embed reads BERT tokenizers (BertNormalizer)"
        ));
    }
    let lowercase = flag(v, "lowercase", true);
    Ok(Some(Normalizer {
        clean_text: flag(v, "clean_text", true),
        chinese: flag(v, "handle_chinese_chars", true),
        strip_accents: v
            .get("strip_accents")
            .and_then(Value::as_bool)
            .unwrap_or(lowercase),
        lowercase,
    }))
}

/// The pre-tokenizer must be BERT's.
fn check_pre_tokenizer(v: Option<&Value>) -> Result<(), ParseError> {
    let kind = v.map_or("(none)", |v| str_or(v, "type", "(none)"));
    if kind == "BertPreTokenizer" {
        Ok(())
    } else {
        Err(format!(
            "the pre-tokenizer is {kind}; hopgraph-embed reads BERT tokenizers (BertPreTokenizer)"
        ))
    }
}

fn specials(v: Option<&Value>) -> Result<Vec<(String, u32)>, ParseError> {
    let mut out = Vec::new();
    for t in v.and_then(Value::as_array).map_or(&[][..], Vec::as_slice) {
        let content = str_or(t, "content", "");
        let id = as_id(t.get("id").unwrap_or(&Value::Null), content)?;
        if content.is_empty() {
            return Err(format!("added token {id} has no content"));
        }
        if flag(t, "normalized", false)
            || flag(t, "lstrip", false)
            || flag(t, "rstrip", false)
            || flag(t, "single_word", false)
        {
            return Err(format!(
                "added token {content:?} is normalized or strips spaces; hopgraph-embed reads \
                 added tokens matched as written (BERT's special tokens)"
            ));
        }
        out.push((content.to_owned(), id));
    }
    out.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
    Ok(out)
}

/// The ids put before and after a single text.
fn post_processor(v: Option<&Value>) -> Result<(Vec<u32>, Vec<u32>), ParseError> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok((Vec::new(), Vec::new()));
    };
    match str_or(v, "type", "(none)") {
        "BertProcessing" => {
            let id = |key: &str| {
                v.get(key)
                    .and_then(|p| p.get(1))
                    .ok_or_else(|| format!("BertProcessing has no {key} id"))
                    .and_then(|x| as_id(x, key))
            };
            Ok((vec![id("cls")?], vec![id("sep")?]))
        }
        "TemplateProcessing" => template(v),
        other => Err(format!(
            "the post-processor is {other}; hopgraph-embed reads BertProcessing or \
             TemplateProcessing"
        )),
    }
}

/// A template `[special...] $A [special...]` with every type id 0.
fn template(v: &Value) -> Result<(Vec<u32>, Vec<u32>), ParseError> {
    let single = v
        .get("single")
        .and_then(Value::as_array)
        .ok_or("TemplateProcessing has no \"single\" template")?;
    let (mut before, mut after, mut seen_text) = (Vec::new(), Vec::new(), false);
    for piece in single {
        if let Some(seq) = piece.get("Sequence") {
            if seen_text || str_or(seq, "id", "") != "A" || seq.get("type_id") != Some(&0.into()) {
                return Err("the single-text template is not [specials] $A [specials]".into());
            }
            seen_text = true;
        } else if let Some(special) = piece.get("SpecialToken") {
            if special.get("type_id") != Some(&0.into()) {
                return Err("the single-text template gives a special token type id != 0".into());
            }
            let name = str_or(special, "id", "");
            let ids = v
                .get("special_tokens")
                .and_then(|s| s.get(name))
                .and_then(|s| s.get("ids"))
                .and_then(Value::as_array)
                .ok_or_else(|| format!("the template's special token {name:?} has no ids"))?;
            let side = if seen_text { &mut after } else { &mut before };
            for id in ids {
                side.push(as_id(id, name)?);
            }
        } else {
            return Err("the single-text template has a piece other than text or special".into());
        }
    }
    if !seen_text {
        return Err("the single-text template has no $A".into());
    }
    Ok((before, after))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tokenizer(extra: serde_json::Value) -> WordPiece {
        let vocab = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "cafe", "a",
            "!", ",", "the", "##s", "δ", "σ", "中", "x",
        ];
        let ids: serde_json::Map<_, _> = vocab
            .iter()
            .enumerate()
            .map(|(i, t)| ((*t).to_owned(), json!(i)))
            .collect();
        let mut v = json!({
            "added_tokens": [
                {"id": 2, "content": "[CLS]", "normalized": false, "special": true},
                {"id": 4, "content": "[MASK]", "normalized": false, "special": true}
            ],
            "normalizer": {"type": "BertNormalizer", "clean_text": true,
                "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
            "model": {"type": "WordPiece", "unk_token": "[UNK]",
                "continuing_subword_prefix": "##", "max_input_chars_per_word": 9, "vocab": ids}
        });
        if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
            for (k, x) in extra {
                v.insert(k.clone(), x.clone());
            }
        }
        WordPiece::from_json(v.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn words_become_longest_pieces() {
        let t = tokenizer(json!({}));
        // unaffable = un ##aff ##able; "The" lower-cased; "Café" without its accent; "!"
        // split off; "xyz" has no piece for "y" and becomes one unknown token.
        assert_eq!(
            t.encode("unaffable The Café! xyz", None),
            vec![2, 5, 6, 7, 12, 8, 10, 1, 3]
        );
        assert_eq!(t.encode("", None), vec![2, 3]);
    }

    #[test]
    fn specials_are_matched_in_the_raw_text() {
        let t = tokenizer(json!({}));
        // "[CLS]" and "[MASK]" as written are special; "[cls]" is three words.
        assert_eq!(t.encode("a[MASK]a", None), vec![2, 9, 4, 9, 3]);
        assert_eq!(t.encode("[CLS]", None), vec![2, 2, 3]);
        assert_eq!(t.encode("[cls]", None), vec![2, 1, 1, 1, 3]);
    }

    #[test]
    fn cleaning_cjk_sigma_and_long_words() {
        let t = tokenizer(json!({}));
        // Controls and U+FFFD go, a zero-width space (Cf) too; each ideograph is a word;
        // capital delta and sigma lower-case one by one; a word over 9 characters is
        // unknown even when its pieces exist.
        assert_eq!(t.encode("a\u{0}\u{fffd}\u{200b}a", None), vec![2, 1, 3]);
        assert_eq!(t.encode("中中", None), vec![2, 16, 16, 3]);
        assert_eq!(t.encode("ΔΣ", None), vec![2, 1, 3]);
        assert_eq!(t.encode("Δ Σ", None), vec![2, 14, 15, 3]);
        assert_eq!(t.encode("unaffable", None), vec![2, 5, 6, 7, 3]);
        assert_eq!(t.encode("unaffablex", None), vec![2, 1, 3]);
    }

    #[test]
    fn truncation_keeps_the_specials() {
        let t = tokenizer(json!({}));
        assert_eq!(t.encode("a a a a", Some(4)), vec![2, 9, 9, 3]);
        assert_eq!(t.encode("a a a a", Some(100)).len(), 6);
    }

    #[test]
    fn other_tokenizers_are_refused_with_the_reason() {
        let bpe = json!({"model": {"type": "BPE", "vocab": {}}, "pre_tokenizer": {"type": "BertPreTokenizer"}});
        assert!(
            WordPiece::from_json(bpe.to_string().as_bytes())
                .unwrap_err()
                .contains("BPE")
        );
        let mut ok = json!({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}});
        assert!(
            WordPiece::from_json(ok.to_string().as_bytes())
                .unwrap_err()
                .contains("pre-tokenizer")
        );
        ok["pre_tokenizer"] = json!({"type": "BertPreTokenizer"});
        ok["normalizer"] = json!({"type": "NFKC"});
        assert!(
            WordPiece::from_json(ok.to_string().as_bytes())
                .unwrap_err()
                .contains("NFKC")
        );
        ok["normalizer"] = Value::Null;
        ok["added_tokens"] = json!([{"id": 0, "content": "[UNK]", "lstrip": true}]);
        assert!(
            WordPiece::from_json(ok.to_string().as_bytes())
                .unwrap_err()
                .contains("strips")
        );
        ok["added_tokens"] = json!([]);
        assert!(WordPiece::from_json(ok.to_string().as_bytes()).is_ok());
        assert!(WordPiece::from_json(b"{").unwrap_err().contains("JSON"));
    }
}
