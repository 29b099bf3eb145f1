//! Vector search: HNSW through the database against the exact scan in the same run.
//!
//! Data: `HOPGRAPH_BENCH_VECTORS` (default 100,000) vectors of `HOPGRAPH_BENCH_DIM`
//! (default 128) floats, drawn around 1,000 random centres (uniform in [-1, 1]^dim, noise
//! 0.5 per coordinate, seeded splitmix64), bulk-loaded into a database (one segment, which
//! builds its HNSW graph). Queries: 1,000 more points of the same distribution.
//!
//! Before the criterion groups, the bench prints for each search breadth `ef` the
//! recall@10 against the exact answer and p50/p99 per-query latency, next to the exact
//! scan's, plus the build time and the vector sections' size.
//!
//! Groups: `vector/exact_scan` (the kernel's exact top-10 over the same normalised rows in
//! memory, the baseline) and `vector/database_hnsw` (`Snapshot::search_vector`, default
//! breadth, through the memory-mapped segment).
//!
//! Run: `cargo bench --bench vector`.

#![allow(clippy::expect_used, reason = "a bench aborts on setup failure")]
#![allow(clippy::cast_possible_truncation, reason = "bench sizes are small")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use hopgraph::vector::{SplitMix64, Vectors, exact, normalize};
use hopgraph::{BulkLoad, Database, NodeProps, VectorQuery};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn points(n: usize, dim: usize, centers: &[Vec<f32>], rng: &mut SplitMix64) -> Vec<Vec<f32>> {
    (0..n)
        .map(|_| {
            let c = &centers[(rng.next_u64() % centers.len() as u64) as usize];
            c.iter()
                .map(|x| x + 0.5 * (rng.next_unit() as f32 * 2.0 - 1.0))
                .collect()
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn bench(c: &mut Criterion) {
    let n = env("HOPGRAPH_BENCH_VECTORS", 100_000);
    let dim = env("HOPGRAPH_BENCH_DIM", 128);
    let mut rng = SplitMix64::new(2026);
    let centers: Vec<Vec<f32>> = (0..1000)
        .map(|_| {
            (0..dim)
                .map(|_| rng.next_unit() as f32 * 2.0 - 1.0)
                .collect()
        })
        .collect();
    let data = points(n, dim, &centers, &mut rng);
    let queries = points(1000, dim, &centers, &mut rng);

    let dir = tempfile::tempdir().expect("temp dir");
    let db = Database::open(dir.path()).expect("open");
    let mut load = BulkLoad::new();
    for (i, v) in data.iter().enumerate() {
        let props = NodeProps {
            embedding: Some(v.clone()),
            ..NodeProps::default()
        };
        load.node(&format!("n{i}"), props).expect("node");
    }
    let t = Instant::now();
    let report = db.bulk_load(load).expect("bulk load");
    let build = t.elapsed();
    let snap = db.snapshot();
    snap.prefault();
    // Keys n0.. were numbered in input order (no edges, so no hub reordering).
    let ids: Vec<u32> = (0..n)
        .map(|i| snap.node_id(&format!("n{i}")).expect("loaded").0)
        .collect();
    let flat: Vec<f32> = data
        .iter()
        .flat_map(|v| normalize(v).expect("non-zero"))
        .collect();
    let rows = Vectors::new(&flat, dim);
    let vector_bytes = (n * dim * 4 + n * 4) as f64 / 1e6;
    println!(
        "vector: {n} x {dim}, bulk load incl. HNSW build {:.1} s, segment {:.1} MB \
         (of which vectors + ids {vector_bytes:.1} MB, the rest graph and records)",
        build.as_secs_f64(),
        report.bytes as f64 / 1e6
    );

    let qn: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| normalize(q).expect("non-zero"))
        .collect();
    let mut truth = Vec::with_capacity(qn.len());
    let mut exact_times = Vec::with_capacity(qn.len());
    for q in &qn {
        let t = Instant::now();
        let top = exact(rows, q, 10, |_| true);
        exact_times.push(t.elapsed());
        truth.push(
            top.iter()
                .map(|s| ids[s.index as usize])
                .collect::<Vec<u32>>(),
        );
    }
    exact_times.sort();
    println!(
        "vector: exact scan   recall@10 1.000  p50 {:>8.3} ms  p99 {:>8.3} ms",
        percentile(&exact_times, 0.5).as_secs_f64() * 1e3,
        percentile(&exact_times, 0.99).as_secs_f64() * 1e3
    );
    for ef in [16, 32, 64, 128, 256] {
        let mut times = Vec::with_capacity(qn.len());
        let mut found = 0usize;
        for (q, want) in queries.iter().zip(&truth) {
            let query = VectorQuery::new(q.clone()).limit(10).ef(ef);
            let t = Instant::now();
            let hits = snap.search_vector(&query).expect("search");
            times.push(t.elapsed());
            found += hits.iter().filter(|h| want.contains(&h.node.0)).count();
        }
        times.sort();
        let p50 = percentile(&times, 0.5);
        println!(
            "vector: hnsw ef {ef:>4} recall@10 {:.3}  p50 {:>8.3} ms  p99 {:>8.3} ms  \
             ({:.1}x faster than the exact scan at p50)",
            found as f64 / (10 * truth.len()) as f64,
            p50.as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
            percentile(&exact_times, 0.5).as_secs_f64() / p50.as_secs_f64()
        );
    }

    let mut g = c.benchmark_group("vector");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    let mut i = 0usize;
    g.bench_function("exact_scan", |b| {
        b.iter(|| {
            i = (i + 1) % qn.len();
            black_box(exact(rows, &qn[i], 10, |_| true))
        })
    });
    let mut i = 0usize;
    g.bench_function("database_hnsw", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            black_box(
                snap.search_vector(&VectorQuery::new(queries[i].clone()).limit(10))
                    .expect("search"),
            )
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
