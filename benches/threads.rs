//! Many agents on one `Database` in one process: read throughput (a shortest path plus a
//! text search per query) from 1, 2 and 4 threads sharing the database, and acknowledged
//! commits per second from 1, 2, 4, 8 and 32 writer threads in `Sync` mode, where group
//! commit lets one fsync acknowledge every writer that queued behind it.
//!
//! The baseline is the one-thread row of each group, measured in the same run: the ratio of
//! the throughputs criterion prints is the scaling figure (read: N threads' queries/s over
//! one thread's; write: N writers' commits/s over one writer's). On a machine with C cores
//! reads cannot scale past C; writes can, because a waiting writer costs no CPU.
//!
//! Graph: Kronecker scale 14 (`HOPGRAPH_BENCH_SCALE` changes it; the `kron` family of
//! `shared/workloads/gen_graph.py`, see `workload/mod.rs`), every node a memory-like text
//! of 8–20 words from a 2,000-word Zipf vocabulary, bulk-loaded into one segment.

#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(
    clippy::cast_possible_truncation,
    reason = "bench sizes and seeded draws are small"
)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hopgraph::{
    BulkLoad, Database, Direction, Durability, EdgeProps, NodeProps, Options, PathSpec, TextQuery,
    WriteBatch,
};

use workload::{SplitMix64, TYPE_NAMES as TYPES};

mod workload;

/// Queries per measured round, split evenly over the threads.
const QUERIES: usize = 960;
/// Commits per measured round, split evenly over the writers.
const COMMITS: usize = 320;
const VOCAB: usize = 2_000;

fn scale() -> u32 {
    workload::env_u64("HOPGRAPH_BENCH_SCALE").map_or(14, |s| s as u32)
}

fn word(rng: &mut SplitMix64) -> String {
    // Zipf-like: rank r with probability ~ 1/r, by inverse transform of the harmonic CDF.
    let u = rng.next_f64();
    let rank = ((VOCAB as f64).powf(u) as usize).clamp(1, VOCAB) - 1;
    format!("w{rank}")
}

fn text(rng: &mut SplitMix64) -> String {
    let n = 8 + rng.below(13) as usize;
    (0..n).map(|_| word(rng)).collect::<Vec<_>>().join(" ")
}

struct Fixture {
    _dir: tempfile::TempDir,
    db: Database,
    pairs: Vec<(String, String)>,
    queries: Vec<String>,
}

fn fixture() -> Fixture {
    let mut rng = SplitMix64(7);
    let (nodes, edges) = workload::kronecker(scale(), &mut rng);
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut load = BulkLoad::new();
    for n in 0..nodes {
        let props = NodeProps {
            kind: "fact".into(),
            content: text(&mut rng),
            ..NodeProps::default()
        };
        load.node(&format!("n{n}"), props).unwrap();
    }
    for &(s, d, t) in &edges {
        load.edge(
            &format!("n{s}"),
            TYPES[t as usize],
            &format!("n{d}"),
            EdgeProps::default(),
        )
        .unwrap();
    }
    db.bulk_load(load).unwrap();
    let pick = |rng: &mut SplitMix64| format!("n{}", rng.below(u64::from(nodes)));
    let pairs = (0..QUERIES)
        .map(|_| (pick(&mut rng), pick(&mut rng)))
        .collect();
    let queries = (0..QUERIES)
        .map(|_| format!("{} {}", word(&mut rng), word(&mut rng)))
        .collect();
    Fixture {
        _dir: dir,
        db,
        pairs,
        queries,
    }
}

/// One query of the read mix: an undirected shortest path (fresh snapshot, as an MCP call
/// or a Python call makes) and a 10-hit text search.
fn read_one(db: &Database, spec: &PathSpec, (a, b): &(String, String), q: &str) -> usize {
    let path = db.shortest_path(a, b, spec).unwrap();
    let hits = db
        .snapshot()
        .search_text(&TextQuery::new(q).limit(10))
        .unwrap();
    path.map_or(0, |p| p.len()) + hits.len()
}

fn reads(c: &mut Criterion) {
    let f = fixture();
    let spec = PathSpec::new().direction(Direction::Both).max_hops(8);
    let mut g = c.benchmark_group("threads_read");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Elements(QUERIES as u64));
    for threads in [1usize, 2, 4] {
        g.bench_function(format!("{threads}_threads"), |bench| {
            bench.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    std::thread::scope(|s| {
                        for t in 0..threads {
                            let (f, spec) = (&f, &spec);
                            s.spawn(move || {
                                let mut sum = 0;
                                for i in (t..QUERIES).step_by(threads) {
                                    sum += read_one(&f.db, spec, &f.pairs[i], &f.queries[i]);
                                }
                                black_box(sum)
                            });
                        }
                    });
                }
                start.elapsed()
            })
        });
    }
    g.finish();
}

fn writes(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let db =
        Database::open_with(dir.path(), Options::default().durability(Durability::Sync)).unwrap();
    let next = AtomicU64::new(0);
    let mut g = c.benchmark_group("threads_commit_sync");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Elements(COMMITS as u64));
    for writers in [1usize, 2, 4, 8, 32] {
        g.bench_function(format!("{writers}_writers"), |bench| {
            bench.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    std::thread::scope(|s| {
                        for w in 0..writers {
                            let (db, next) = (&db, &next);
                            s.spawn(move || {
                                for _ in (w..COMMITS).step_by(writers) {
                                    // A memory and a link to one of 64 topics: the shape of
                                    // an agent's `create_memory` with one relation.
                                    let i = next.fetch_add(1, Ordering::Relaxed);
                                    let (m, topic) = (format!("m{i}"), format!("topic{}", i % 64));
                                    let mut b = WriteBatch::new();
                                    b.ensure_node(&m).ensure_node(&topic).link(
                                        &m,
                                        "about",
                                        &topic,
                                        EdgeProps::default(),
                                    );
                                    db.commit(b).unwrap();
                                }
                            });
                        }
                    });
                }
                start.elapsed()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, reads, writes);
criterion_main!(benches);
