//! Engine benchmarks: commit throughput (Sync vs Buffered), bulk load of a Kronecker graph,
//! open time, and neighbor iteration from segments against a `Vec<Vec<u32>>` baseline
//! measured in the same run.
//!
//! `cargo bench --bench engine` runs at Kronecker scale 16 (65,536 nodes, ~1M edges) in
//! well under three minutes; `HOPGRAPH_BENCH_SCALE=20` runs scale 20. The graph is a port
//! of the `kron` family of `shared/workloads/gen_graph.py` (Graph500 generator, A,B,C,D =
//! 0.57,0.19,0.19,0.05, edge factor 16, random node and edge permutations, types
//! caused_by .15 / contradicts .05 / supersedes .10 / related_to .70, self-loops and
//! duplicate triples removed keeping the first) driven by a seeded splitmix64, so it has
//! the same shape but not the same bytes as the Python output.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hopgraph::{
    BulkLoad, Database, Direction, Durability, EdgeProps, NodeId, Options, TypeFilter, WriteBatch,
};

use workload::{SplitMix64, TYPE_NAMES as TYPES};

mod workload;

/// A Kronecker graph: node count and (source, target, type index) edges.
struct Kron {
    nodes: u32,
    edges: Vec<(u32, u32, u16)>,
}

fn kron(scale: u32, seed: u64) -> Kron {
    let (nodes, edges) = workload::kronecker(scale, &mut SplitMix64(seed));
    Kron { nodes, edges }
}

fn scale() -> u32 {
    std::env::var("HOPGRAPH_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16)
}

fn bulk_load(dir: &Path, g: &Kron, keys: &[String]) -> Database {
    let db = Database::open(dir).unwrap();
    let mut load = BulkLoad::new();
    // As `hopgraph import` does: look the keys of a few edges up together first.
    let mut ahead = Vec::with_capacity(32);
    for chunk in g.edges.chunks(16) {
        ahead.clear();
        ahead.extend(
            chunk
                .iter()
                .flat_map(|&(s, d, _)| [keys[s as usize].as_str(), keys[d as usize].as_str()]),
        );
        load.prefetch(&ahead);
        for &(s, d, t) in chunk {
            load.edge(
                &keys[s as usize],
                TYPES[t as usize],
                &keys[d as usize],
                EdgeProps::default(),
            )
            .unwrap();
        }
    }
    db.bulk_load(load).unwrap();
    db
}

fn bench_commit(c: &mut Criterion) {
    let mut group = c.benchmark_group("commit");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (mode, durability) in [
        ("sync", Durability::Sync),
        ("buffered", Durability::Buffered),
    ] {
        for edges in [1usize, 100, 10_000] {
            let tmp = tempfile::tempdir().unwrap();
            let db =
                Database::open_with(tmp.path(), Options::default().durability(durability)).unwrap();
            // A pool of existing targets; every edge comes from a new node, so no triple
            // repeats however many iterations run.
            let mut b = WriteBatch::new();
            for i in 0..1000 {
                b.ensure_node(format!("pool{i}"));
            }
            db.commit(b).unwrap();
            let mut next = 0u64;
            group.throughput(Throughput::Elements(edges as u64));
            group.bench_function(BenchmarkId::new(mode, edges), |bench| {
                bench.iter_batched(
                    || {
                        let mut b = WriteBatch::new();
                        for _ in 0..edges {
                            let key = format!("c{next}");
                            b.ensure_node(key.clone()).link(
                                key,
                                TYPES[(next % 4) as usize],
                                format!("pool{}", next % 1000),
                                EdgeProps::default(),
                            );
                            next += 1;
                        }
                        b
                    },
                    |b| black_box(db.commit(b).unwrap()),
                    BatchSize::PerIteration,
                )
            });
        }
    }
    group.finish();
}

fn bench_graph(c: &mut Criterion) {
    let scale = scale();
    let g = kron(scale, 1);
    let keys: Vec<String> = (0..g.nodes).map(|i| i.to_string()).collect();
    eprintln!(
        "kron scale {scale}: {} nodes, {} edges after removing self-loops and duplicates",
        g.nodes,
        g.edges.len()
    );

    let mut group = c.benchmark_group(format!("kron{scale}"));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(if scale > 16 { 60 } else { 8 }));
    group.throughput(Throughput::Elements(g.edges.len() as u64));
    group.bench_function("bulk_load", |bench| {
        bench.iter_batched(
            || tempfile::tempdir().unwrap(),
            |tmp| {
                drop(black_box(bulk_load(tmp.path(), &g, &keys)));
                tmp
            },
            BatchSize::PerIteration,
        )
    });

    // One loaded database for the read benchmarks.
    let tmp = tempfile::tempdir().unwrap();
    drop(bulk_load(tmp.path(), &g, &keys));
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(2));
    group.bench_function("open", |bench| {
        bench.iter(|| black_box(Database::open(tmp.path()).unwrap()))
    });

    let db = Database::open(tmp.path()).unwrap();
    let snap = db.snapshot();
    assert_eq!(snap.edge_count(), g.edges.len() as u64);
    // The baseline: plain out-adjacency lists indexed by the engine's node ids, so both
    // sides visit the same edges in the same node order.
    // Nodes without edges were never loaded, so they have no id.
    let ids: Vec<Option<NodeId>> = keys.iter().map(|k| snap.node_id(k)).collect();
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); snap.node_bound() as usize];
    for &(s, d, _) in &g.edges {
        let (s, d) = (ids[s as usize].unwrap(), ids[d as usize].unwrap());
        lists[s.index()].push(d.0);
    }
    group.throughput(Throughput::Elements(g.edges.len() as u64));
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("neighbors_segment", |bench| {
        bench.iter(|| {
            let mut sum = 0u64;
            for node in 0..snap.node_bound() {
                snap.for_each_neighbor(NodeId(node), Direction::Out, &TypeFilter::All, |n| {
                    sum += u64::from(n.node.0)
                });
            }
            black_box(sum)
        })
    });
    group.bench_function("neighbors_vec_vec", |bench| {
        bench.iter(|| {
            let mut sum = 0u64;
            for list in &lists {
                for &n in list {
                    sum += u64::from(n);
                }
            }
            black_box(sum)
        })
    });
    group.finish();
}

criterion_group!(benches, bench_commit, bench_graph);
criterion_main!(benches);
