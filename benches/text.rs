//! Text search benchmark: a 3-word query over 100,000 memory-like documents through the
//! full-text index (`Snapshot::search_text`), against the substring scan `memory_search`
//! used before (every node decoded, lowercased, `contains` per word) as the baseline,
//! measured in the same run on the same database.
//!
//! Documents: a title of 3–6 words and a content of 20–60 words drawn from a 20,000-word
//! synthetic vocabulary with a Zipf-like (1/rank) distribution, seeded. Two stores are
//! measured: everything in one segment (after a checkpoint), and the last 5,000 documents
//! still in the delta on top of it; and a store of 5,000 documents all in the delta (an
//! agent's memory between checkpoints). `HOPGRAPH_BENCH_TEXT_DOCS` changes the document
//! count of the first two.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hopgraph::{Database, Durability, NodeProps, Options, Snapshot, TextQuery, WriteBatch};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const VOCAB: usize = 20_000;

fn word(i: usize) -> String {
    // Pronounceable pseudo-words: syllables from the rank's digits in base 20.
    const SYL: [&str; 20] = [
        "ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "pi", "do", "gra", "fel", "tor", "bin",
        "cus", "dex", "ly", "mon", "ph", "zo",
    ];
    let mut s = String::new();
    let mut x = i + 20;
    while x > 0 {
        s.push_str(SYL[x % 20]);
        x /= 20;
    }
    s
}

/// A word rank with probability about 1/rank (inverse-CDF of a continuous Zipf(1)).
#[allow(clippy::cast_possible_truncation, reason = "a rank below VOCAB")]
fn zipf(rng: &mut Rng) -> usize {
    let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    ((VOCAB as f64).powf(u) as usize)
        .saturating_sub(1)
        .min(VOCAB - 1)
}

fn sentence(rng: &mut Rng, words: &[String], min: u64, max: u64) -> String {
    let n = min + rng.below(max - min + 1);
    (0..n)
        .map(|_| words[zipf(rng)].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A memory-like document: a title of 3–6 words and a content of 20–60.
fn memory(rng: &mut Rng, words: &[String]) -> NodeProps {
    NodeProps {
        kind: "fact".into(),
        title: sentence(rng, words, 3, 6),
        content: sentence(rng, words, 20, 60),
        ..NodeProps::default()
    }
}

fn docs() -> usize {
    std::env::var("HOPGRAPH_BENCH_TEXT_DOCS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000)
}

fn build(dir: &std::path::Path, n: usize, delta: usize) -> Database {
    let words: Vec<String> = (0..VOCAB).map(word).collect();
    let db = Database::open_with(dir, Options::default().durability(Durability::Buffered)).unwrap();
    let mut rng = Rng(42);
    let mut b = WriteBatch::new();
    for i in 0..n {
        b.upsert_node(format!("m{i}"), memory(&mut rng, &words));
        if (i + 1) % 5_000 == 0 {
            db.commit(std::mem::take(&mut b)).unwrap();
        }
        if i + 1 == n - delta {
            db.checkpoint().unwrap();
        }
    }
    db.commit(b).unwrap();
    db
}

/// The old `memory_search` text score: lowercase substring match per word.
fn substring_scan(snap: &Snapshot, query: &str, limit: usize) -> Vec<(String, f64)> {
    let lowered = query.to_lowercase();
    let terms: Vec<&str> = lowered.split_whitespace().collect();
    let mut hits = Vec::new();
    for id in snap.node_ids() {
        let Some(node) = snap.node(id).unwrap() else {
            continue;
        };
        let title = node.props.title.to_lowercase();
        let content = node.props.content.to_lowercase();
        let mut sum = 0.0;
        for t in &terms {
            if title.contains(t) {
                sum += 1.0;
            } else if content.contains(t) {
                sum += 0.5;
            }
        }
        if sum > 0.0 {
            hits.push((node.key.clone(), sum / terms.len() as f64));
        }
    }
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    hits.truncate(limit);
    hits
}

fn bench(c: &mut Criterion) {
    let n = docs();
    let words: Vec<String> = (0..VOCAB).map(word).collect();
    // Mid-frequency words (ranks 50, 300, 2000): each in hundreds to thousands of docs.
    let query = format!("{} {} {}", words[50], words[300], words[2000]);
    let mut g = c.benchmark_group("text_query_3_words");
    g.sample_size(20).measurement_time(Duration::from_secs(8));
    // The third store is a small agent-memory store that lives in the delta (written since
    // the last checkpoint), where the delta's index answers alone.
    for (label, n, delta) in [
        ("one_segment", n, 0usize),
        ("segment_plus_delta", n, 5_000.min(n / 2)),
        ("delta_only", 5_000.min(n), 5_000.min(n)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = build(dir.path(), n, delta);
        let snap = db.snapshot();
        let q = TextQuery::new(query.clone()).limit(10);
        let hits = snap.search_text(&q).unwrap();
        assert!(!hits.is_empty(), "the query must match something");
        g.bench_function(BenchmarkId::new("index", format!("{label}/{n}")), |b| {
            b.iter(|| black_box(snap.search_text(&q).unwrap()))
        });
        g.bench_function(
            BenchmarkId::new("substring_scan", format!("{label}/{n}")),
            |b| b.iter(|| black_box(substring_scan(&snap, &query, 10))),
        );
    }
    g.finish();
}

/// A write's cost in the delta's text index: one memory (title and content) committed per
/// iteration (buffered durability, so the WAL's fsync does not hide it) into a store whose
/// 5,000 documents live in the delta.
fn bench_commit(c: &mut Criterion) {
    let words: Vec<String> = (0..VOCAB).map(word).collect();
    let dir = tempfile::tempdir().unwrap();
    let db = build(dir.path(), 5_000, 5_000);
    let mut rng = Rng(7);
    let mut next = 0u64;
    let mut g = c.benchmark_group("text_commit");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    g.bench_function("one_memory/delta_of_5000", |b| {
        b.iter(|| {
            let mut batch = WriteBatch::new();
            batch.upsert_node(format!("new{next}"), memory(&mut rng, &words));
            next += 1;
            black_box(db.commit(batch).unwrap())
        })
    });
    g.finish();
}

criterion_group!(benches, bench, bench_commit);
criterion_main!(benches);
