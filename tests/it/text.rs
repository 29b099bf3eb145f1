//! Full-text search: the index against a brute-force model over random writes, deletes,
//! checkpoints, compactions and reopens; reopen after an unclean exit; known-item quality;
//! filters and paging; corruption of a text section.

use std::collections::{BTreeMap, BTreeSet};

use hopgraph::text::{
    Accumulator, Analyzer, PHRASE_BOOST, ParsedQuery, doc_terms, has_phrase, idf,
};
use hopgraph::{Database, NodeFilter, NodeProps, TextField, TextQuery, WriteBatch};
use proptest::prelude::*;

use crate::common::tempdir;

const VOCAB: [&str; 10] = [
    "Graph",
    "graphs",
    "database",
    "Index",
    "indexing",
    "query",
    "the",
    "fast",
    "snake_case",
    "数据库",
];

fn text_of(words: &[u8]) -> String {
    words
        .iter()
        .map(|&w| VOCAB[w as usize % VOCAB.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Clone, Debug)]
enum Step {
    Put(u8, Vec<u8>, Vec<u8>),
    Delete(u8),
    Checkpoint,
    Compact,
    Reopen,
}

type Doc = hopgraph::Node;

/// The engine's index semantics spelled out by brute force: segments as lists of records
/// (superseded ones stay until compaction), tombstones, and the delta.
#[derive(Default)]
struct Model {
    live: BTreeMap<u8, u32>,
    next_id: u32,
    segments: Vec<BTreeMap<u32, Doc>>,
    seg_deleted: BTreeSet<u32>,
    delta: BTreeMap<u32, Doc>,
    delta_deleted: BTreeSet<u32>,
    current: BTreeMap<u32, Doc>,
    /// Kind per node (the pruning test's filter).
    kinds: BTreeMap<u32, &'static str>,
    /// Node id per key (the pruning test's keys, beyond `u8`).
    wide: BTreeMap<usize, u32>,
}

impl Model {
    fn put(&mut self, k: u8, title: String, content: String) {
        let id = *self.live.entry(k).or_insert_with(|| {
            self.next_id += 1;
            self.next_id - 1
        });
        let doc = Doc {
            id: hopgraph::NodeId(id),
            key: format!("k{k}"),
            props: NodeProps {
                title,
                content,
                ..NodeProps::default()
            },
            created_at: 0,
            updated_at: 0,
            valid_from: 0,
            valid_to: None,
        };
        self.delta.insert(id, doc.clone());
        self.current.insert(id, doc);
    }

    /// `put` for keys beyond `u8`, with a kind.
    fn put_wide(&mut self, k: usize, title: String, content: String, kind: &'static str) {
        let id = *self.wide.entry(k).or_insert_with(|| {
            self.next_id += 1;
            self.next_id - 1
        });
        let doc = Doc {
            id: hopgraph::NodeId(id),
            key: format!("k{k}"),
            props: NodeProps {
                title,
                content,
                ..NodeProps::default()
            },
            created_at: 0,
            updated_at: 0,
            valid_from: 0,
            valid_to: None,
        };
        self.kinds.insert(id, kind);
        self.delta.insert(id, doc.clone());
        self.current.insert(id, doc);
    }

    fn delete_wide(&mut self, k: usize) {
        if let Some(id) = self.wide.remove(&k) {
            self.delta.remove(&id);
            self.current.remove(&id);
            self.delta_deleted.insert(id);
        }
    }

    fn delete(&mut self, k: u8) {
        if let Some(id) = self.live.remove(&k) {
            self.delta.remove(&id);
            self.current.remove(&id);
            self.delta_deleted.insert(id);
        }
    }

    fn checkpoint(&mut self) {
        self.segments.push(std::mem::take(&mut self.delta));
        self.seg_deleted
            .extend(std::mem::take(&mut self.delta_deleted));
    }

    fn compact(&mut self) {
        if self.segments.len() < 2 && self.seg_deleted.is_empty() {
            return;
        }
        let mut merged = BTreeMap::new();
        for s in self.segments.iter().rev() {
            for (id, d) in s {
                if !self.seg_deleted.contains(id) && !merged.contains_key(id) {
                    merged.insert(*id, d.clone());
                }
            }
        }
        self.segments = vec![merged];
        self.seg_deleted.clear();
    }

    /// Node `id`'s length for the ranking's tie-break: its fields' token counts summed.
    fn doc_len(&self, id: u32) -> u64 {
        self.current.get(&id).map_or(0, |d| {
            doc_terms(&Analyzer::new(), d)
                .lens
                .iter()
                .map(|&l| u64::from(l))
                .sum()
        })
    }

    /// (node id, score) of every hit, by brute force.
    fn search(&self, query: &str) -> BTreeMap<u32, f64> {
        let a = Analyzer::new();
        let q = ParsedQuery::parse(&a, query).unwrap();
        let stat_docs: Vec<&Doc> = self
            .segments
            .iter()
            .flat_map(|s| s.values())
            .chain(self.delta.values())
            .collect();
        let n = stat_docs.len() as u64;
        let terms: Vec<_> = stat_docs.iter().map(|d| doc_terms(&a, d)).collect();
        let mut totals = [0u64; 3];
        for t in &terms {
            for (total, &l) in totals.iter_mut().zip(&t.lens) {
                *total += u64::from(l);
            }
        }
        let avg = totals.map(|t| if n == 0 { 0.0 } else { t as f64 / n as f64 });
        let dfs: Vec<f64> = q
            .terms
            .iter()
            .map(|qt| {
                let df = terms
                    .iter()
                    .filter(|d| d.terms.iter().any(|x| x.0 == qt.term))
                    .count();
                idf(n, df as u64)
            })
            .collect();
        let mut out = BTreeMap::new();
        for (id, doc) in &self.current {
            let dt = doc_terms(&a, doc);
            let mut acc = Accumulator::default();
            let mut any = false;
            for (qt, &idf) in q.terms.iter().zip(&dfs) {
                if let Some((_, tf)) = dt.terms.iter().find(|x| x.0 == qt.term) {
                    acc.add(qt, idf, &[2.0, 1.0, 1.0], tf, &dt.lens, &avg);
                    any = true;
                }
            }
            if any {
                let mut s = acc.base(q.words);
                if q.phrase.len() >= 2 && has_phrase(&a, doc, &q.phrase) {
                    s *= PHRASE_BOOST;
                }
                out.insert(*id, s);
            }
        }
        out
    }
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0u8..8, prop::collection::vec(0u8..10, 0..3), prop::collection::vec(0u8..10, 0..6))
            .prop_map(|(k, t, c)| Step::Put(k, t, c)),
        2 => (0u8..8).prop_map(Step::Delete),
        1 => Just(Step::Checkpoint),
        1 => Just(Step::Compact),
        1 => Just(Step::Reopen),
    ]
}

fn check(db: &Database, model: &Model, queries: &[Vec<u8>]) -> Result<(), TestCaseError> {
    let snap = db.snapshot();
    for q in queries {
        let text = text_of(q);
        if text.trim().is_empty() {
            continue;
        }
        let hits = snap
            .search_text(&TextQuery::new(text.clone()).limit(1000))
            .unwrap();
        let got: BTreeMap<u32, f64> = hits.iter().map(|h| (h.node.0, h.score)).collect();
        let want = model.search(&text);
        prop_assert_eq!(got.len(), hits.len(), "a node twice for {:?}", text);
        prop_assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "hits for {:?}",
            text
        );
        for (id, s) in &got {
            let w = want[id];
            prop_assert!(
                (s - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{text:?} node {id}: {s} vs {w}"
            );
        }
        prop_assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// The index answers exactly like the brute-force model after every step, across
    /// checkpoints (several segments, superseded versions), compactions and reopens.
    #[test]
    fn text_index_matches_brute_force(
        steps in prop::collection::vec(step(), 1..24),
        queries in prop::collection::vec(prop::collection::vec(0u8..10, 1..4), 1..4),
    ) {
        let dir = tempdir();
        let mut db = Database::open(dir.path()).unwrap();
        let mut model = Model::default();
        for s in steps {
            match s {
                Step::Put(k, t, c) => {
                    let (title, content) = (text_of(&t), text_of(&c));
                    let mut b = WriteBatch::new();
                    b.upsert_node(format!("k{k}"), NodeProps {
                        title: title.clone(),
                        content: content.clone(),
                        ..NodeProps::default()
                    });
                    db.commit(b).unwrap();
                    model.put(k, title, content);
                }
                Step::Delete(k) => {
                    if model.live.contains_key(&k) {
                        let mut b = WriteBatch::new();
                        b.delete_node(format!("k{k}"));
                        db.commit(b).unwrap();
                        model.delete(k);
                    }
                }
                Step::Checkpoint => {
                    let r = db.checkpoint().unwrap();
                    if r.segment.is_some() {
                        model.checkpoint();
                    }
                }
                Step::Compact => {
                    db.compact().unwrap();
                    model.compact();
                }
                Step::Reopen => {
                    drop(db);
                    db = Database::open(dir.path()).unwrap();
                }
            }
            check(&db, &model, &queries)?;
        }
        db.verify().unwrap();
    }
}

fn memory(title: &str, content: &str, kind: &str) -> NodeProps {
    NodeProps {
        title: title.into(),
        content: content.into(),
        kind: kind.into(),
        ..NodeProps::default()
    }
}

/// A memory acknowledged before an unclean exit is found after reopening; a deleted one
/// never is, whether the text lives in the WAL (delta) or in a segment.
#[test]
fn acknowledged_text_survives_reopen_and_deletes_stay_deleted() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    b.upsert_node(
        "a",
        memory("Kubernetes upgrade", "Rolled the cluster to 1.31", "event"),
    );
    b.upsert_node(
        "b",
        memory(
            "Postgres vacuum",
            "autovacuum tuned for the cluster",
            "fact",
        ),
    );
    db.commit(b).unwrap();
    db.checkpoint().unwrap();
    let mut b = WriteBatch::new();
    b.upsert_node(
        "c",
        memory("Cluster DNS outage", "CoreDNS crashed", "event"),
    );
    b.delete_node("b");
    db.commit(b).unwrap();
    // No checkpoint, no orderly close: the handle is leaked as a crash would leave it.
    std::mem::forget(db);
    let db = Database::open(dir.path()).unwrap();
    let snap = db.snapshot();
    let keys = |q: &str| -> Vec<String> {
        snap.search_text(&TextQuery::new(q).limit(10))
            .unwrap()
            .iter()
            .map(|h| snap.node(h.node).unwrap().unwrap().key.clone())
            .collect()
    };
    let found = keys("clusters");
    assert!(
        found.contains(&"a".to_owned()) && found.contains(&"c".to_owned()),
        "{found:?}"
    );
    assert!(!found.contains(&"b".to_owned()));
    assert!(keys("autovacuum").is_empty());
    db.checkpoint().unwrap();
    db.compact().unwrap();
    let snap = db.snapshot();
    let hits = snap.search_text(&TextQuery::new("COREDNS!")).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].field, TextField::Content);
    assert!(hits[0].snippet.contains("CoreDNS"));
    assert!(
        snap.search_text(&TextQuery::new("autovacuum"))
            .unwrap()
            .is_empty()
    );
    db.verify().unwrap();
}

/// Known-item search: each target is found in the top 3 by its exact words, re-cased and
/// punctuated words, and inflected words, in a corpus of similar memories.
#[test]
fn known_items_rank_high() {
    let corpus = [
        (
            "Chose SQLite for local state",
            "We picked SQLite because the agent runs offline.",
        ),
        (
            "Database migration plan",
            "Migrating the user table to the new schema next week.",
        ),
        (
            "Rate limiter design",
            "Token bucket limiter on the API gateway, 100 requests per second.",
        ),
        (
            "Deploy checklist",
            "Run migrations, warm caches, flip the feature flag.",
        ),
        (
            "Caching layer",
            "Redis caches session tokens; evictions are LRU.",
        ),
        (
            "Open file handle leak",
            "src/db/open.rs leaked file handles when recovery failed.",
        ),
        (
            "Config parsing",
            "parse_config_file rejects unknown keys in strict mode.",
        ),
        (
            "Search relevance",
            "BM25 ranking replaced substring matching for memory search.",
        ),
        (
            "Team offsite",
            "The team met in Lisbon to plan the roadmap.",
        ),
        ("Logging format", "Structured JSON logs with request ids."),
        ("MPI launcher", "mpirun starts the MPI job on every host."),
        (
            "Tcl string objects",
            "Tcl_AppendUnicodeToObj grows the object's buffer.",
        ),
    ];
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    for (i, (t, c)) in corpus.iter().enumerate() {
        b.upsert_node(format!("m{i}"), memory(t, c, "fact"));
    }
    db.commit(b).unwrap();
    let queries: [(&str, usize); 11] = [
        ("sqlite offline", 0),
        ("MIGRATING schema!", 1),
        ("limiters", 2),
        ("src/db/open.rs", 5),
        ("handles leaking", 5),
        ("parse_config_file", 6),
        ("config file", 6),
        ("rankings", 7),
        ("session token caching", 4),
        // A plural the stemmer keeps apart from its singular (`other_number`).
        ("MPIs", 10),
        // A camelCase segment of a joined identifier, written alone as one word.
        ("appendunicodetoobj", 11),
    ];
    for round in 0..2 {
        let snap = db.snapshot();
        for (q, want) in queries {
            let hits = snap.search_text(&TextQuery::new(q).limit(3)).unwrap();
            let keys: Vec<String> = hits
                .iter()
                .map(|h| snap.node(h.node).unwrap().unwrap().key.clone())
                .collect();
            assert!(
                keys.contains(&format!("m{want}")),
                "round {round}: {q:?} gave {keys:?}"
            );
        }
        db.checkpoint().unwrap();
    }
}

/// A name written in one convention finds the texts that write it in another first
/// (snake_case, kebab-case, camelCase and one word share the joined name's stem), above
/// texts that only hold its parts as words, even shorter ones holding them as a phrase;
/// those still match. Delta and segment alike.
#[test]
fn a_name_finds_its_other_conventions_first() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    let texts = [
        ("snake", "set the worker_pool flag before start"),
        ("kebab", "set the worker-pool flag before start"),
        ("camel", "set the workerPool flag before start"),
        ("joined", "set the workerpool flag before start"),
        ("prose", "worker pool"),
        ("prose2", "a worker in the pool"),
    ];
    for (key, content) in texts {
        b.upsert_node(key, memory("", content, "fact"));
    }
    // Filler, so the parts are common words and the name rare.
    for i in 0..40 {
        b.upsert_node(
            format!("filler{i}"),
            memory("", &format!("worker {i} pool {i} notes"), "fact"),
        );
    }
    db.commit(b).unwrap();
    for round in ["delta", "segment"] {
        let snap = db.snapshot();
        for query in [
            "workerPool",
            "worker_pool",
            "worker-pool",
            "WORKER_POOL",
            "workerPools",
        ] {
            let hits = snap.search_text(&TextQuery::new(query).limit(10)).unwrap();
            let keys: Vec<String> = hits
                .iter()
                .map(|h| snap.node(h.node).unwrap().unwrap().key.clone())
                .collect();
            let mut first: Vec<&str> = keys.iter().take(4).map(String::as_str).collect();
            first.sort_unstable();
            assert_eq!(
                first,
                ["camel", "joined", "kebab", "snake"],
                "{round} {query}: {keys:?}"
            );
            assert!(
                keys.iter().any(|k| k == "prose"),
                "{round} {query}: {keys:?}"
            );
        }
        db.checkpoint().unwrap();
    }
}

/// A search without snippets answers the same hits (nodes, scores, fields) with empty
/// snippets; with them, each snippet holds a match.
#[test]
fn hits_without_snippets_are_the_same_hits() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    for i in 0..60 {
        let content = format!(
            "{} note {i}: the cache layer evicts entries; graphs of {} nodes",
            "filler words ".repeat(i % 7),
            i * 3
        );
        b.upsert_node(
            format!("n{i}"),
            memory(&format!("Cache {i}"), &content, "fact"),
        );
    }
    db.commit(b).unwrap();
    for round in ["delta", "segment"] {
        let snap = db.snapshot();
        for query in ["cache evicts", "graphs nodes", "note 7"] {
            let with = snap.search_text(&TextQuery::new(query).limit(20)).unwrap();
            let without = snap
                .search_text(&TextQuery::new(query).limit(20).snippets(false))
                .unwrap();
            assert!(!with.is_empty(), "{round} {query}");
            assert_eq!(with.len(), without.len(), "{round} {query}");
            for (a, b) in with.iter().zip(&without) {
                assert_eq!((a.node, a.score, a.field), (b.node, b.score, b.field));
                assert!(b.snippet.is_empty(), "{round} {query}: {:?}", b.snippet);
                assert!(!a.snippet.is_empty(), "{round} {query}");
            }
        }
        db.checkpoint().unwrap();
    }
}

/// Filters apply during the search: `limit` hits come back when that many match, paging
/// with `offset` continues where the first page ended, and limits are clear errors.
#[test]
fn filters_paging_and_limits() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    for i in 0..40 {
        let kind = if i % 4 == 0 { "decision" } else { "note" };
        // Notes mention the word more often, so they outrank decisions.
        let content = if kind == "note" {
            "alpha alpha alpha"
        } else {
            "alpha and more"
        };
        b.upsert_node(format!("n{i}"), memory("", content, kind));
    }
    db.commit(b).unwrap();
    let snap = db.snapshot();
    let f = NodeFilter::any().kinds(["decision"]);
    let hits = snap
        .search_text(&TextQuery::new("alpha").limit(5).filter(f.clone()))
        .unwrap();
    assert_eq!(hits.len(), 5);
    for h in &hits {
        assert_eq!(snap.node(h.node).unwrap().unwrap().props.kind, "decision");
    }
    let all = snap
        .search_text(&TextQuery::new("alpha").limit(40))
        .unwrap();
    let page = snap
        .search_text(&TextQuery::new("alpha").limit(10).offset(10))
        .unwrap();
    assert_eq!(page, all[10..20].to_vec());
    assert!(snap.search_text(&TextQuery::new("alpha").limit(0)).is_err());
    assert!(snap.search_text(&TextQuery::new(" \t ")).is_err());
    assert!(snap.search_text(&TextQuery::new("a".repeat(5000))).is_err());
    assert!(
        snap.search_text(&TextQuery::new("the, of!"))
            .unwrap()
            .is_empty()
    );
    assert!(
        snap.search_text(&TextQuery::new("alpha").offset(1_000_000))
            .is_err()
    );
}

/// A damaged byte in a text section is found by `verify` and by the first search of the
/// segment, never a panic.
#[test]
fn damaged_text_section_is_reported() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    b.upsert_node("x", memory("Alpha beta", "gamma delta", "fact"));
    db.commit(b).unwrap();
    db.checkpoint().unwrap();
    drop(db);
    let seg = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "hgs"))
        .unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let layout = hopgraph::format::segment::SegmentLayout::parse(&bytes).unwrap();
    let at = layout
        .entry(hopgraph::format::segment::SectionKind::TextPostings)
        .unwrap()
        .range
        .start;
    bytes[at] ^= 0x55;
    std::fs::set_permissions(&seg, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(&seg, &bytes).unwrap();
    let db = Database::open(dir.path()).unwrap();
    let e = db.verify().expect_err("damage found");
    assert!(e.is_corruption(), "{e}");
    let e = db
        .snapshot()
        .search_text(&TextQuery::new("alpha"))
        .expect_err("damage found");
    assert!(e.is_corruption(), "{e}");
}

/// Words for the pruning test: a few frequent ones (long postings lists of many blocks),
/// inflections sharing stems, and a tail of rare ones.
const ZIPF_VOCAB: [&str; 24] = [
    "the", "data", "file", "files", "filed", "run", "running", "runs", "index", "indexes", "graph",
    "query", "queries", "node", "edge", "fast", "slow", "alpha", "beta", "gamma", "delta", "omega",
    "kappa", "sigma",
];

/// A word rank drawn about as often as 1/(rank + 1).
fn zipf_word(r: u64) -> &'static str {
    let weights: Vec<u64> = (1..=ZIPF_VOCAB.len() as u64).map(|k| 1000 / k).collect();
    let mut x = r % weights.iter().sum::<u64>();
    for (w, &p) in ZIPF_VOCAB.iter().zip(&weights) {
        if x < p {
            return w;
        }
        x -= p;
    }
    ZIPF_VOCAB[0]
}

fn zipf_text(seed: &mut u64, words: u64) -> String {
    let mut out = Vec::new();
    for _ in 0..words {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push(zipf_word(*seed >> 33));
    }
    out.join(" ")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Pruned evaluation (block bounds, MaxScore) returns exactly the top hits of
    /// exhaustive evaluation (the brute-force model): the same nodes in the same order
    /// with the same scores, for random corpora large enough to give lists of many blocks,
    /// with superseded versions in an older segment, deletes, a delta, a filter, limits
    /// and offsets.
    #[test]
    fn pruned_top_k_equals_exhaustive(
        seed in any::<u64>(),
        docs in 300usize..1200,
        queries in prop::collection::vec(
            (prop::collection::vec(0usize..ZIPF_VOCAB.len(), 1..5), 1usize..25, 0usize..6, any::<bool>()),
            1..6,
        ),
    ) {
        let dir = tempdir();
        let db = Database::open_with(
            dir.path(),
            hopgraph::Options::default().durability(hopgraph::Durability::Buffered),
        ).unwrap();
        let mut model = Model::default();
        let mut rng = seed;
        let put = |db: &Database, model: &mut Model, k: usize, rng: &mut u64| {
            let title = zipf_text(rng, 1 + *rng % 4);
            let content = zipf_text(rng, 3 + (*rng >> 7) % 40);
            let kind = if k.is_multiple_of(3) { "even" } else { "odd" };
            let mut b = WriteBatch::new();
            b.upsert_node(format!("k{k}"), memory(&title, &content, kind));
            db.commit(b).unwrap();
            model.put_wide(k, title, content, kind);
        };
        for k in 0..docs {
            put(&db, &mut model, k, &mut rng);
        }
        db.checkpoint().unwrap();
        model.checkpoint();
        // Supersede and delete some, checkpoint again, then leave some in the delta.
        for k in (0..docs).step_by(7) {
            put(&db, &mut model, k, &mut rng);
        }
        for k in (3..docs).step_by(11) {
            let mut b = WriteBatch::new();
            b.delete_node(format!("k{k}"));
            db.commit(b).unwrap();
            model.delete_wide(k);
        }
        db.checkpoint().unwrap();
        model.checkpoint();
        for k in (1..docs).step_by(13) {
            put(&db, &mut model, k, &mut rng);
        }
        let snap = db.snapshot();
        for (words, limit, offset, filtered) in queries {
            let text: Vec<&str> = words.iter().map(|&w| ZIPF_VOCAB[w]).collect();
            let text = text.join(" ");
            let mut tq = TextQuery::new(text.clone()).limit(limit).offset(offset);
            if filtered {
                tq = tq.filter(NodeFilter::any().kinds(["even"]));
            }
            let got: Vec<(u32, f64)> = snap
                .search_text(&tq)
                .unwrap()
                .iter()
                .map(|h| (h.node.0, h.score))
                .collect();
            let mut want: Vec<(u32, f64)> = model
                .search(&text)
                .into_iter()
                .filter(|(id, _)| !filtered || model.kinds[id] == "even")
                .collect();
            // Score descending, then the shorter document, then the lower id.
            want.sort_by(|a, b| {
                b.1.total_cmp(&a.1)
                    .then(model.doc_len(a.0).cmp(&model.doc_len(b.0)))
                    .then(a.0.cmp(&b.0))
            });
            let want: Vec<(u32, f64)> = want.into_iter().skip(offset).take(limit).collect();
            prop_assert_eq!(
                got.iter().map(|x| x.0).collect::<Vec<_>>(),
                want.iter().map(|x| x.0).collect::<Vec<_>>(),
                "{:?} limit {} offset {} filtered {}: got {:?} want {:?}",
                text, limit, offset, filtered, got, want
            );
            for (g, w) in got.iter().zip(&want) {
                prop_assert!((g.1 - w.1).abs() <= 1e-12 * w.1.abs().max(1.0), "{:?} {:?}", g, w);
            }
        }
        db.verify().unwrap();
    }
}

/// A bulk load analyses texts on worker threads in batches; its index must answer exactly
/// as one built by commits and a checkpoint from the same documents (same keys, same
/// scores), over enough documents for several batches.
#[test]
fn bulk_loaded_text_index_equals_a_committed_one() {
    let (bulk_dir, commit_dir) = (tempdir(), tempdir());
    let opts = || hopgraph::Options::default().durability(hopgraph::Durability::Buffered);
    let bulk = Database::open_with(bulk_dir.path(), opts()).unwrap();
    let committed = Database::open_with(commit_dir.path(), opts()).unwrap();
    let mut rng = 7u64;
    let mut load = hopgraph::BulkLoad::new();
    let mut b = WriteBatch::new();
    for k in 0..2_500 {
        let n = 1 + rng % 4;
        let title = zipf_text(&mut rng, n);
        let n = 3 + (rng >> 7) % 40;
        let content = zipf_text(&mut rng, n);
        let props = memory(&title, &content, "doc");
        load.node(&format!("k{k}"), props.clone()).unwrap();
        b.upsert_node(format!("k{k}"), props);
    }
    bulk.bulk_load(load).unwrap();
    committed.commit(b).unwrap();
    committed.checkpoint().unwrap();
    bulk.verify().unwrap();
    let hits = |db: &Database, q: &str| -> Vec<(String, f64)> {
        let snap = db.snapshot();
        snap.search_text(&TextQuery::new(q).limit(50))
            .unwrap()
            .iter()
            .map(|h| (snap.node(h.node).unwrap().unwrap().key.clone(), h.score))
            .collect()
    };
    for q in [
        "alpha",
        "running files",
        "graph index query",
        "omega sigma kappa",
        "the data",
    ] {
        let got = hits(&bulk, q);
        assert!(!got.is_empty(), "{q}");
        assert_eq!(got, hits(&committed, q), "{q}");
    }
}

/// Text of node `i`: words, identifiers, numbers and non-ASCII from a fixed vocabulary,
/// in an order drawn from `i` (a small LCG), so that terms repeat across documents and
/// postings span many blocks.
fn varied_text(i: u64, words: usize) -> String {
    const VOCAB: [&str; 24] = [
        "graph",
        "graphs",
        "database",
        "Indexing",
        "query",
        "queries",
        "memory",
        "agent",
        "other_name",
        "testDriver",
        "HTTPServer",
        "v2",
        "2024",
        "naïve",
        "café",
        "東京",
        "the",
        "of",
        "connection",
        "pooled",
        "connections",
        "deploy",
        "rollback",
        "it's",
    ];
    let mut x = i
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    (0..words)
        .map(|_| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            VOCAB[(x >> 33) as usize % VOCAB.len()]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The three paths that build a segment's text index — a checkpoint of the delta (after
/// updates and deletes), a bulk load, a compaction — write what analysing the segment's
/// records again gives, byte for byte (`Database::verify_text_index`).
#[test]
fn every_path_writes_the_index_its_records_give() {
    let props = |i: u64| NodeProps {
        title: varied_text(i, 1 + (i % 5) as usize),
        content: varied_text(i + 100_000, (i % 40) as usize),
        ..Default::default()
    };
    let n = 3_000u64;
    let committed = tempdir();
    let db = Database::open(committed.path()).unwrap();
    for chunk in 0..n / 500 {
        let mut b = WriteBatch::new();
        for i in chunk * 500..(chunk + 1) * 500 {
            b.upsert_node(format!("n{i}"), props(i));
        }
        db.commit(b).unwrap();
    }
    let mut b = WriteBatch::new();
    for i in (0..n).step_by(7) {
        b.upsert_node(format!("n{i}"), props(i + 7_000_000));
    }
    for i in (3..n).step_by(11) {
        b.delete_node(format!("n{i}"));
    }
    db.commit(b).unwrap();
    db.checkpoint().unwrap();
    let r = db.verify_text_index(&|_, _, _| {}).unwrap();
    assert_eq!(r.segments, 1);
    assert_eq!(r.records, db.snapshot().node_count());

    let loaded = tempdir();
    let db2 = Database::open(loaded.path()).unwrap();
    let mut load = hopgraph::BulkLoad::new();
    for i in 0..n {
        load.node(&format!("n{i}"), props(i)).unwrap();
    }
    db2.bulk_load(load).unwrap();
    let r = db2.verify_text_index(&|_, _, _| {}).unwrap();
    assert_eq!((r.segments, r.records), (1, n));

    // Writes on top, checkpointed into a second segment, then everything compacted.
    let mut b = WriteBatch::new();
    for i in (0..n).step_by(5) {
        b.upsert_node(format!("n{i}"), props(i + 9_000_000));
    }
    db2.commit(b).unwrap();
    db2.checkpoint().unwrap();
    let r = db2.verify_text_index(&|_, _, _| {}).unwrap();
    assert_eq!((r.segments, r.records), (2, n + n / 5));
    db2.compact().unwrap();
    let r = db2.verify_text_index(&|_, _, _| {}).unwrap();
    assert_eq!((r.segments, r.records), (1, n));
}
