//! `search_nodes` at scale: the word-index candidates (`Snapshot::substring_candidates`)
//! against the full scan they replaced, on N entities (default 50,000) shaped like
//! server-memory data, in one segment plus a small delta.
//!
//! ```text
//! cargo run --release -p hopgraph-memory --example search_nodes_bench [-- N]
//! ```
//!
//! Prints, per query, the median time (15 runs after one warm-up) of the scan and of the
//! candidates plus the same per-node check, their ratio (after checking that both find
//! the same nodes), and the whole `search_nodes` call (which also builds the answer:
//! entities and their relations); and the one-time cost of building the word index (the
//! first query after a segment appears).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark harness"
)]

use std::time::{Duration, Instant};

use hopgraph::{Database, NodeId, Snapshot};
use hopgraph_memory::aim::{self, Entity};
use hopgraph_memory::kg;

/// Syllables of the made-up vocabulary (2 and 3 syllables: 8,400 words).
const SYLLABLES: [&str; 20] = [
    "ka", "lo", "mi", "ren", "tas", "vo", "qui", "ber", "lin", "dor", "sa", "pe", "tor", "ga",
    "ni", "mu", "rel", "fa", "zo", "han",
];
/// Common words mixed into observations (each in many entities).
const COMMON: [&str; 8] = [
    "the", "works", "at", "likes", "met", "on", "with", "project",
];

fn vocabulary() -> Vec<String> {
    let mut v = Vec::new();
    for a in SYLLABLES {
        for b in SYLLABLES {
            v.push(format!("{a}{b}"));
            for c in SYLLABLES {
                v.push(format!("{a}{b}{c}"));
            }
        }
    }
    v
}

/// The check `search_nodes` makes per node: lowercased name, type, observations.
fn matches(snap: &Snapshot, id: NodeId, q: &str) -> bool {
    let Some(n) = snap.node(id).unwrap() else {
        return false;
    };
    let obs = n.props.props.get("observations").and_then(|v| v.as_array());
    n.key.to_lowercase().contains(q)
        || n.props.kind.to_lowercase().contains(q)
        || obs.is_some_and(|a| {
            a.iter()
                .filter_map(|o| o.as_str())
                .any(|o| o.to_lowercase().contains(q))
        })
}

/// The scan `search_nodes` did before: the check on every node.
fn scan(snap: &Snapshot, query: &str) -> Vec<NodeId> {
    let q = query.to_lowercase();
    snap.node_ids()
        .filter(|&id| matches(snap, id, &q))
        .collect()
}

/// What it does now: the check on the candidates only.
fn candidates(snap: &Snapshot, query: &str) -> Vec<NodeId> {
    let q = query.to_lowercase();
    match snap.substring_candidates(query).unwrap() {
        Some(c) => c.into_iter().filter(|&id| matches(snap, id, &q)).collect(),
        None => scan(snap, query),
    }
}

fn median(mut f: impl FnMut()) -> Duration {
    f();
    let mut t: Vec<Duration> = (0..15)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[t.len() / 2]
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("N: a number of entities"))
        .unwrap_or(50_000);
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |m: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        usize::try_from(seed % m as u64).unwrap()
    };
    let vocab = vocabulary();
    let mut word = |common: bool| {
        if common && next(3) == 0 {
            COMMON[next(COMMON.len())].to_owned()
        } else {
            vocab[next(vocab.len())].clone()
        }
    };
    let cap = |w: String| {
        let mut c = w.chars();
        c.next()
            .map(|f| f.to_uppercase().chain(c).collect::<String>())
            .unwrap_or_default()
    };
    let entities: Vec<Entity> = (0..n)
        .map(|i| Entity {
            name: format!("{} {} {i}", cap(word(false)), cap(word(false))),
            entity_type: ["person", "project", "organization", "event"][i % 4].to_owned(),
            observations: (0..3)
                .map(|_| (0..6).map(|_| word(true)).collect::<Vec<_>>().join(" "))
                .collect(),
        })
        .collect();
    let (bulk, delta) = entities.split_at(n - n / 100);
    for chunk in bulk.chunks(1000) {
        aim::store_entities(&db, chunk).unwrap();
    }
    db.checkpoint().unwrap();
    for chunk in delta.chunks(1000) {
        aim::store_entities(&db, chunk).unwrap();
    }
    let snap = db.snapshot();
    let s = Instant::now();
    scan(&snap, "warm-up");
    println!(
        "first scan (pages read): {:.1} ms",
        s.elapsed().as_secs_f64() * 1e3
    );
    let s = Instant::now();
    snap.substring_candidates("x").unwrap();
    println!(
        "{n} entities ({} in the delta); word index built on the first query in {:.1} ms",
        delta.len(),
        s.elapsed().as_secs_f64() * 1e3
    );
    println!(
        "{:<18} {:>8} {:>8} {:>9} {:>9} {:>12} {:>8} {:>14}",
        "query",
        "matches",
        "cands",
        "scan ms",
        "cands ms",
        "cands+check",
        "ratio",
        "search_nodes ms"
    );
    // A word, fragments of words, a name, a phrase across two words, a common word, a
    // type, digits, nothing, and one letter (every entity: the worst case).
    let queries = [
        "kalomi",
        "Renta",
        "orzo",
        "Kalo Mi",
        "works at",
        "the",
        "organization",
        "12345",
        "zzz",
        "e",
    ];
    for q in queries {
        let want = scan(&snap, q);
        assert_eq!(candidates(&snap, q), want, "query {q:?}");
        let got: Vec<String> = kg::search_nodes(&snap, q)
            .unwrap()
            .entities
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(got.len(), want.len(), "query {q:?}");
        let t_scan = median(|| {
            std::hint::black_box(scan(&snap, q));
        });
        let t_new = median(|| {
            std::hint::black_box(candidates(&snap, q));
        });
        let t_cand = median(|| {
            std::hint::black_box(snap.substring_candidates(q).unwrap());
        });
        let n_cand = snap.substring_candidates(q).unwrap().map_or(n, |c| c.len());
        let t_tool = median(|| {
            std::hint::black_box(kg::search_nodes(&snap, q).unwrap());
        });
        println!(
            "{:<18} {:>8} {:>8} {:>9.3} {:>9.3} {:>12.3} {:>7.1}x {:>14.3}",
            format!("{q:?}"),
            want.len(),
            n_cand,
            t_scan.as_secs_f64() * 1e3,
            t_cand.as_secs_f64() * 1e3,
            t_new.as_secs_f64() * 1e3,
            t_scan.as_secs_f64() / t_new.as_secs_f64(),
            t_tool.as_secs_f64() * 1e3,
        );
    }
}
