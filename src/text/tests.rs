//! Unit tests of query parsing and BM25 scoring.

use super::*;
use crate::model::NodeProps;

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

#[test]
fn query_limits_are_clear_errors() {
    let a = Analyzer::new();
    let e = ParsedQuery::parse(&a, "   ").expect_err("empty");
    assert!(e.to_string().contains("empty"), "{e}");
    let e = ParsedQuery::parse(&a, &"x".repeat(QUERY_BYTES_MAX + 1)).expect_err("long");
    assert!(e.to_string().contains("4096"), "{e}");
    assert!(ParsedQuery::parse(&a, &"x".repeat(QUERY_BYTES_MAX)).is_ok());
    // Stop words and punctuation only: no terms, not an error.
    let q = ParsedQuery::parse(&a, "the of, and?! ...").expect("parses");
    assert!(q.terms.is_empty());
    assert_eq!(q.phrase, ["the", "of", "and"]);
}

#[test]
fn query_terms_have_exact_and_stem_forms() {
    let q = ParsedQuery::parse(&Analyzer::new(), "Running the DB_open").expect("parses");
    let names: Vec<String> = q
        .terms
        .iter()
        .map(|t| String::from_utf8_lossy(&t.term).into_owned())
        .collect();
    assert!(names.contains(&"=running".to_owned()), "{names:?}");
    assert!(names.contains(&"~run".to_owned()), "{names:?}");
    assert!(names.contains(&"=db_open".to_owned()), "{names:?}");
    assert!(
        !names.contains(&"=the".to_owned()),
        "stop words are not scored"
    );
    assert_eq!(q.words, 3); // running, db, open
}

#[test]
fn bm25_prefers_rare_terms_short_fields_and_more_occurrences() {
    assert!(idf(1000, 1) > idf(1000, 100));
    assert!(idf(10, 10) >= 0.0);
    let w = [2.0, 1.0, 1.0];
    let avg = [5.0, 10.0, 10.0];
    let score = |tf: [u32; 3], lens: [u32; 3]| -> f64 {
        term_fields(1.0, &w, &tf, &lens, &avg).iter().sum()
    };
    assert!(score([0, 1, 0], [5, 5, 0]) > score([0, 1, 0], [5, 50, 0]));
    assert!(score([0, 3, 0], [5, 10, 0]) > score([0, 1, 0], [5, 10, 0]));
    // The title weighs more, and a word in two fields more than in one, but the fields are
    // saturated together (BM25F): below k1 + 1 however often the word occurs.
    assert!(score([1, 0, 0], [5, 10, 0]) > score([0, 1, 0], [5, 10, 0]));
    assert!(score([1, 1, 0], [5, 10, 0]) > score([1, 0, 0], [5, 10, 0]));
    assert!(score([1000, 1000, 1000], [5, 10, 10]) < BM25_K1 + 1.0);
    assert_eq!(score([0, 0, 0], [5, 10, 10]), 0.0);
    let parts = term_fields(1.0, &w, &[1, 3, 0], &[5, 10, 0], &avg);
    assert!(parts[1] > parts[0] && parts[0] > 0.0 && parts[2] == 0.0);
}

/// The block bound a search prunes with is never below a score of a document the block
/// could hold (any tf up to the bound's, any length from the bound's).
#[test]
fn term_bound_covers_every_document_it_bounds() {
    use crate::format::text::BlockMeta;
    let w = [2.0, 1.0, 0.5];
    let avg = [4.0, 30.0, 7.5];
    for tf_max in [[1u8, 0, 0], [0, 3, 1], [2, 7, 255], [1, 1, 1]] {
        for len_min in [[1u16, 1, 1], [3, 20, 5], [9, 200, 60]] {
            let meta = BlockMeta {
                tf_max,
                len_min,
                ..BlockMeta::default()
            };
            let bound = term_bound(1.7, &w, &meta, &avg);
            for scale_tf in 0..=3u32 {
                for extra_len in [0u32, 1, 10, 1000] {
                    let tf: [u32; 3] = std::array::from_fn(|f| match tf_max[f] {
                        0 => 0,
                        255 => 255 + 1000 * scale_tf,
                        t => (u32::from(t) * scale_tf / 3).max(1),
                    });
                    let lens: [u32; 3] = std::array::from_fn(|f| u32::from(len_min[f]) + extra_len);
                    let s: f64 = term_fields(1.7, &w, &tf, &lens, &avg).iter().sum();
                    // Equal up to rounding (the search adds 1e-9 of slack).
                    assert!(s <= bound * (1.0 + 1e-12), "{tf:?} {lens:?}: {s} > {bound}");
                }
            }
        }
    }
}

#[test]
fn exact_beats_stem_and_all_words_boost() {
    let q = ParsedQuery::parse(&Analyzer::new(), "running fast").expect("parses");
    let w = [2.0, 1.0, 1.0];
    let (lens, avg) = ([0, 4, 0], [1.0, 4.0, 1.0]);
    let score = |terms: &[&[u8]]| {
        let mut acc = Accumulator::default();
        for t in &q.terms {
            if terms.contains(&t.term.as_slice()) {
                acc.add(t, 1.0, &w, &[0, 1, 0], &lens, &avg);
            }
        }
        acc.base(q.words)
    };
    let exact = score(&[b"=running", b"~run"]);
    let stem_only = score(&[b"~run"]);
    let both = score(&[b"=running", b"~run", b"=fast", b"~fast"]);
    assert!(exact > stem_only && stem_only > 0.0);
    assert!(both > exact * ALL_WORDS_BOOST, "{both} {exact}");
}

#[test]
fn phrases_and_snippets() {
    let a = Analyzer::new();
    let n = node(
        1,
        "Notes",
        "We chose the write-ahead log. Connection pooling helps.",
    );
    let q = ParsedQuery::parse(&a, "connection pooling").expect("parses");
    assert!(has_phrase(&a, &n, &q.phrase));
    let q2 = ParsedQuery::parse(&a, "pooling connection").expect("parses");
    assert!(!has_phrase(&a, &n, &q2.phrase));
    let s = snippet(&a, &n.props.content, &q);
    assert!(s.contains("Connection pooling"), "{s}");
    // Long text: the snippet is at most 200 characters and holds the match.
    let long = format!("{} needle {}", "ä ".repeat(500), "ö ".repeat(500));
    let q = ParsedQuery::parse(&a, "needles").expect("parses");
    let s = snippet(&a, &long, &q);
    assert!(
        s.chars().count() <= SNIPPET_CHARS_MAX && s.contains("needle"),
        "{s}"
    );
}

#[test]
fn doc_terms_count_fields_and_props_strings() {
    let mut n = node(1, "Alpha beta", "beta gamma gamma");
    n.props.props.insert(
        "observations".into(),
        serde_json::json!(["Delta seen", 3, "beta"]),
    );
    n.props.props.insert("n".into(), serde_json::json!(5));
    let d = doc_terms(&Analyzer::new(), &n);
    assert_eq!(d.lens, [2, 3, 3]);
    let tf = |t: &str| d.terms.iter().find(|x| x.0 == t.as_bytes()).map(|x| x.1);
    assert_eq!(tf("=beta"), Some([1, 1, 1]));
    assert_eq!(tf("=gamma"), Some([0, 2, 0]));
    assert_eq!(tf("=delta"), Some([0, 0, 1]));
    assert_eq!(tf("=5"), None, "non-string props are not indexed");
}

/// The phrase pre-check never says no where the full check says yes (over texts mixing
/// case changes, connectors, punctuation, digits and non-ASCII), and does say no to
/// plain texts without the phrase.
#[test]
fn phrase_precheck_never_hides_a_phrase() {
    let a = Analyzer::new();
    let phrases: Vec<Vec<String>> = [
        vec!["impersonate", "verbosity"],
        vec!["http", "server", "v2"],
        vec!["open", "rs"],
        vec!["a", "b"],
        vec!["kelvin", "scale"],
    ]
    .iter()
    .map(|p| p.iter().map(|s| (*s).to_owned()).collect())
    .collect();
    let pieces = [
        "Impersonate",
        "verbosity",
        "HTTPServer",
        "v2",
        "src/db/open.rs",
        "a_b",
        "A-B",
        "x",
        "impersonate,",
        "(verbosity)",
        "HttpServerV2",
        "open.RS",
        "数据",
        "é",
        "--",
        "a'b",
        "2",
        "ImpersonateVerbosity",
        "impersonate_verbosity",
        "\u{212a}elvin",
        "scale—",
        "«Scale»",
        "kelvinécale",
        "Straße",
        "İmpersonate",
        "\u{a0}",
    ];
    let mut seed = 7u64;
    for _ in 0..8000 {
        let mut text = String::new();
        for _ in 0..6 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let p = pieces[(seed >> 33) as usize % pieces.len()];
            text.push_str(p);
            if !(seed >> 40).is_multiple_of(3) {
                text.push(' ');
            }
        }
        for p in &phrases {
            if text_has_phrase(&a, &text, p) {
                assert!(phrase_may_occur(&text, p), "{text:?} {p:?}");
            }
        }
    }
    let p = &phrases[0];
    assert!(!phrase_may_occur("verbosity then impersonate", p));
    assert!(phrase_may_occur("the Impersonate, VERBOSITY flags", p));
    // Non-ASCII text is pre-checked too, save for a character lowercasing to ASCII.
    assert!(!phrase_may_occur("verbosity — then impersonate", p));
    assert!(phrase_may_occur("l’Impersonate — verbosity", p));
    let k = &phrases[4];
    assert!(text_has_phrase(&a, "\u{212a}elvin scale", k));
    assert!(phrase_may_occur("\u{212a}elvin scale", k));
}

/// The snippet's pattern search analyses only some chunks; its anchor is the first match
/// that a full analysis finds, over inflections, casing, punctuation and identifiers.
#[test]
fn snippet_search_finds_the_first_match_a_full_scan_finds() {
    let a = Analyzer::new();
    let filler = "lorem ipsum dolor sit amet, ".repeat(40);
    let texts = [
        format!("{filler} the Crashed (Timeout) handler, crashes again"),
        format!("{filler} rem_assign and remAssign: Saturating arithmetic"),
        format!("{filler} Connection-pooling; POOLS of connections"),
        format!("{filler} nothing relevant here at all"),
        format!("héllo wörld {filler} updating the Updates"),
    ];
    let queries = [
        "crashing timeouts",
        "remAssign saturating",
        "connection pools",
        "updates",
        "wörld",
    ];
    for text in &texts {
        for q in queries {
            let parsed = ParsedQuery::parse(&a, q).expect("parses");
            let stems: Vec<String> = parsed.word_texts.iter().map(|w| a.stem(w)).collect();
            let full = a
                .find_token(text, |t| {
                    t.kind != TermKind::Whole
                        && (parsed.word_texts.contains(&t.text) || stems.contains(&a.stem(&t.text)))
                })
                .map_or(0, |t| t.start);
            let lead: usize = text[..full]
                .chars()
                .rev()
                .take(60)
                .map(char::len_utf8)
                .sum();
            let want: String = text[full - lead..]
                .chars()
                .take(SNIPPET_CHARS_MAX)
                .collect();
            assert_eq!(snippet(&a, text, &parsed), want.trim(), "{q:?}");
        }
    }
}

/// `TermCounts`, reused from document to document (a huge one among them, which resets
/// its table), counts every document's terms as a plain map of `for_each_term`'s output
/// does (a repeated token's stem taken from its first occurrence included).
#[test]
fn term_counts_reused_equal_a_plain_count() {
    let a = Analyzer::new();
    let huge: String = (0..(TERM_COUNTS_SLOTS_KEPT + 100))
        .map(|i| format!("w{i} "))
        .collect();
    let texts = [
        (
            "Alpha beta",
            "beta gamma gamma Gamma's camelCase kebab-case",
        ),
        ("", ""),
        ("ok", huge.as_str()),
        ("日本語 text", "snake_case v2.3.1 src/db/open.rs beta"),
        ("beta", "alpha"),
        // The same text as a stemmed word and as an unstemmed whole identifier, both ways.
        ("a\u{b7}bC a\u{b7}bc", "a\u{b7}bc a\u{b7}bC a\u{b7}bc"),
    ];
    let mut counts = TermCounts::default();
    for (i, (title, content)) in (0u32..).zip(texts) {
        let n = node(i, title, content);
        counts.count(&a, &n);
        let mut want: Vec<(Vec<u8>, [u32; TEXT_FIELDS])> = Vec::new();
        let mut at: std::collections::HashMap<Vec<u8>, usize> = Default::default();
        let mut lens = [0u32; TEXT_FIELDS];
        for (f, text) in field_texts(&n).iter().enumerate() {
            a.for_each_term(text, |t| {
                if t.first() == Some(&analyze::EXACT) {
                    lens[f] += 1;
                }
                let i = *at.entry(t.to_vec()).or_insert_with(|| {
                    want.push((t.to_vec(), [0; TEXT_FIELDS]));
                    want.len() - 1
                });
                want[i].1[f] += 1;
            });
        }
        let mut got: Vec<(Vec<u8>, [u32; TEXT_FIELDS])> =
            counts.terms().map(|(t, tf)| (t.to_vec(), tf)).collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "document {i}");
        assert_eq!(counts.lens, lens, "document {i}");
        if i == 2 {
            assert!(
                counts.table.capacity() > TERM_COUNTS_SLOTS_KEPT,
                "the huge one grew it"
            );
        }
    }
    assert!(
        counts.table.capacity() <= TERM_COUNTS_SLOTS_KEPT,
        "and the next reset it"
    );
}

/// A query name indexed whole by its joined stem is one word's evidence; its parts weigh
/// PART_WEIGHT of a word each, unless a part is also a word of the query on its own.
/// Parts of a path or version (no joined stem) weigh a word's.
#[test]
fn a_query_names_parts_weigh_less_than_the_name() {
    let weights = |text: &str| -> Vec<(String, f64)> {
        ParsedQuery::parse(&Analyzer::new(), text)
            .expect("parses")
            .terms
            .iter()
            .map(|t| (String::from_utf8_lossy(&t.term).into_owned(), t.weight))
            .collect()
    };
    let weight = |terms: &[(String, f64)], term: &str| {
        terms
            .iter()
            .find(|t| t.0 == term)
            .map(|t| t.1)
            .unwrap_or_else(|| panic!("{term} not in {terms:?}"))
    };
    let joined = format!("~{}", Analyzer::new().stem("readonly"));
    for query in ["readOnly mounts", "read_only mounts", "read-only mounts"] {
        let t = weights(query);
        assert_eq!(weight(&t, &joined), WHOLE_STEM_WEIGHT, "{query}");
        assert_eq!(weight(&t, "=read"), PART_WEIGHT, "{query}");
        assert_eq!(weight(&t, "~read"), STEM_WEIGHT * PART_WEIGHT, "{query}");
        assert_eq!(weight(&t, "~onli"), STEM_WEIGHT * PART_WEIGHT, "{query}");
        assert_eq!(weight(&t, "=mounts"), 1.0, "{query}");
        assert_eq!(weight(&t, "~mount"), STEM_WEIGHT, "{query}");
    }
    // A part that is also a word of its own, after or before the name, weighs a word's;
    // so does a part's stem that a word shares.
    for query in [
        "readOnly read",
        "read readOnly",
        "readOnly reads",
        "readOnly reads read",
    ] {
        let t = weights(query);
        assert_eq!(weight(&t, "~read"), STEM_WEIGHT, "{query}");
        assert_eq!(weight(&t, "~onli"), STEM_WEIGHT * PART_WEIGHT, "{query}");
    }
    assert_eq!(weight(&weights("readOnly read"), "=read"), 1.0);
    // No joined stem, no lighter parts.
    let t = weights("src/db/open.rs");
    assert_eq!(weight(&t, "=open"), 1.0);
    assert_eq!(weight(&t, "~open"), STEM_WEIGHT);
}

#[test]
fn exact_word_terms_require_their_stem_only_where_analysis_guarantees_it() {
    let q =
        ParsedQuery::parse(&Analyzer::new(), "Running crashes v2 数据库 DB_open").expect("parses");
    let name = |i: usize| String::from_utf8_lossy(&q.terms[i].term).into_owned();
    let required = |term: &str| {
        let i = (0..q.terms.len()).find(|&i| name(i) == term)?;
        q.terms[i].requires.map(name)
    };
    assert_eq!(required("=running").as_deref(), Some("~run"));
    assert_eq!(required("=crashes").as_deref(), Some("~crash"));
    assert!(required("=v2").is_some());
    assert_eq!(required("=db").as_deref(), Some("~db"));
    // A whole identifier, CJK bigrams and stems require nothing.
    assert_eq!(required("=db_open"), None);
    assert_eq!(required("=数据"), None);
    assert_eq!(required("~run"), None);
}

/// Text whose words cover what analysis treats differently: inflections, case, digits,
/// identifiers in every convention, paths and versions, accents, CJK.
const IMPLIED_VOCAB: &[&str] = &[
    "Running",
    "runs",
    "ran",
    "crash,",
    "(Crashes)",
    "v2",
    "v2.3.1",
    "snake_case_name",
    "camelCaseName",
    "HTTPServer",
    "kebab-case",
    "src/db/open.rs",
    "APIs",
    "MPIs",
    "focus",
    "naïve",
    "café",
    "数据库",
    "x86_64",
    "e2e",
    "workerPoolSpecs",
    "tkMain.c",
    "a",
    "is",
    "42",
    "R2D2",
    "UTF-8",
    "über",
    "Straße",
    "indexes",
    "indices",
    "ID",
    "ids",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 200, ..Default::default() })]

    /// The invariant `QueryTerm::requires` stands for: in any document, a field holding a
    /// query word's exact term holds the term it requires too (searches skip the exact
    /// term's list where the required one is absent).
    #[test]
    fn a_required_term_is_in_every_field_of_its_exact_term(
        title in proptest::collection::vec(0..IMPLIED_VOCAB.len(), 0..8),
        content in proptest::collection::vec(0..IMPLIED_VOCAB.len(), 0..30),
    ) {
        let join = |ws: &[usize]| ws.iter().map(|&w| IMPLIED_VOCAB[w]).collect::<Vec<_>>().join(" ");
        required_terms_hold(&join(&title), &join(&content))?;
    }

    /// The same over arbitrary printable text (any script, symbols, connectors).
    #[test]
    fn a_required_term_is_in_every_field_of_its_exact_term_in_any_text(
        title in "\\PC{0,24}",
        content in "(\\PC{0,12}[ _./:-]?){0,8}",
    ) {
        required_terms_hold(&title, &content)?;
    }

    /// The invariant the phrase-pair filter stands for: a document holding a query's
    /// phrase in a field has every bit of the phrase's pairs in its filter (a search
    /// skips the phrase check of a document whose filter lacks one). Every run of
    /// consecutive words of the content is queried, the whole content among them.
    #[test]
    fn a_document_holding_a_phrase_holds_its_pairs(
        title in proptest::collection::vec(0..IMPLIED_VOCAB.len(), 0..6),
        content in proptest::collection::vec(0..IMPLIED_VOCAB.len(), 2..12),
    ) {
        let join = |ws: &[usize]| ws.iter().map(|&w| IMPLIED_VOCAB[w]).collect::<Vec<_>>().join(" ");
        let held = phrase_pairs_hold(&join(&title), &join(&content))?;
        proptest::prop_assert!(held > 0, "the content holds itself as a phrase");
    }

    /// The same over arbitrary printable text (any script, symbols, connectors).
    #[test]
    fn a_document_holding_a_phrase_holds_its_pairs_in_any_text(
        title in "\\PC{0,24}",
        content in "(\\PC{0,12}[ _./:-]?){0,8}",
    ) {
        phrase_pairs_hold(&title, &content)?;
    }
}

/// Checks the phrase-pair filter of a document of `title` and `content` against the
/// phrase of every run of consecutive whitespace-separated chunks of `content`; answers
/// how many of those phrases (of two units or more) the content holds.
fn phrase_pairs_hold(
    title: &str,
    content: &str,
) -> Result<usize, proptest::test_runner::TestCaseError> {
    let analyzer = Analyzer::new();
    let doc = doc_terms(&analyzer, &node(1, title, content));
    let chunks: Vec<&str> = content.split_whitespace().collect();
    let mut held = 0;
    for i in 0..chunks.len() {
        for j in i + 1..=chunks.len() {
            let Ok(q) = ParsedQuery::parse(&analyzer, &chunks[i..j].join(" ")) else {
                continue;
            };
            if !text_has_phrase(&analyzer, content, &q.phrase) {
                continue;
            }
            held += 1;
            proptest::prop_assert!(
                crate::format::text::filter_holds(
                    &crate::format::text::pair_filter_of(&doc.pairs),
                    &q.phrase_pairs()
                ),
                "{:?} holds the phrase {:?}, its filter lacks a pair",
                content,
                q.phrase
            );
            // And its pair hashes (what its segment's phrase-pair set holds) have them all.
            proptest::prop_assert!(
                q.phrase_pair_hashes()
                    .iter()
                    .all(|h| doc.pairs.binary_search(h).is_ok()),
                "{:?} holds the phrase {:?}, its pair hashes lack one",
                content,
                q.phrase
            );
        }
    }
    Ok(held)
}

/// Checks `QueryTerm::requires` against a document of `title` and `content`, querying
/// every word of both.
fn required_terms_hold(
    title: &str,
    content: &str,
) -> Result<(), proptest::test_runner::TestCaseError> {
    let analyzer = Analyzer::new();
    let doc = doc_terms(&analyzer, &node(1, title, content));
    let tf_of = |term: &[u8]| doc.terms.iter().find(|(t, _)| t == term).map(|(_, tf)| *tf);
    let q = ParsedQuery::parse(&analyzer, &format!("{title} {content} x")).expect("parses");
    for t in &q.terms {
        let Some(r) = t.requires else { continue };
        let Some(tf) = tf_of(&t.term) else { continue };
        let req = tf_of(&q.terms[r].term).unwrap_or([0; TEXT_FIELDS]);
        for f in 0..TEXT_FIELDS {
            proptest::prop_assert!(
                tf[f] == 0 || req[f] > 0,
                "{:?} in field {} without {:?}",
                String::from_utf8_lossy(&t.term),
                f,
                String::from_utf8_lossy(&q.terms[r].term)
            );
        }
    }
    Ok(())
}
