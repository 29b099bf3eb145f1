//! Many processes on one database: commit throughput with 1, 2 and 4 writer processes
//! (each committing small batches in `Sync` mode), and the cost of `snapshot()` when
//! nothing changed, against a plain `Arc` clone baseline measured in the same run.
//!
//! Children are this bench binary re-executed with `HOPGRAPH_BENCH_CHILD` set.

use std::hint::black_box;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use hopgraph::{Database, EdgeProps, WriteBatch};

const COMMITS_PER_PROCESS: u32 = 200;

fn child(spec: &str) {
    let (dir, id) = spec.split_once('|').expect("spec is dir|id");
    let db = Database::open(dir).expect("open");
    for i in 0..COMMITS_PER_PROCESS {
        let mut b = WriteBatch::new();
        let (a, t) = (format!("p{id}-{i}"), format!("hub{}", i % 16));
        b.ensure_node(&a).ensure_node(&t).link(&a, "about", &t, EdgeProps::default());
        db.commit(b).expect("commit");
    }
}

fn commit_throughput(c: &mut Criterion) {
    let mut g = c.benchmark_group("multiprocess_commits");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for writers in [1u32, 2, 4] {
        g.throughput(Throughput::Elements(u64::from(writers * COMMITS_PER_PROCESS)));
        g.bench_function(format!("{writers}_writer_processes"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let dir = tempfile::tempdir().expect("tempdir");
                    Database::open(dir.path()).expect("create");
                    let start = Instant::now();
                    let kids: Vec<_> = (0..writers)
                        .map(|w| {
                            Command::new(std::env::current_exe().expect("exe"))
                                .env("HOPGRAPH_BENCH_CHILD", format!("{}|{w}", dir.path().display()))
                                .spawn()
                                .expect("spawn")
                        })
                        .collect();
                    for mut k in kids {
                        assert!(k.wait().expect("wait").success());
                    }
                    total += start.elapsed();
                }
                total
            })
        });
    }
    g.finish();
}

fn snapshot_refresh(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path()).expect("open");
    let mut b = WriteBatch::new();
    b.ensure_node("a").ensure_node("b").link("a", "t", "b", EdgeProps::default());
    db.commit(b).expect("commit");
    let mut g = c.benchmark_group("snapshot_unchanged");
    g.bench_function("db_snapshot", |b| b.iter(|| black_box(db.snapshot())));
    let arc = Arc::new(db.snapshot());
    g.bench_function("baseline_arc_clone", |b| b.iter(|| black_box(arc.clone())));
    g.finish();
}

criterion_group!(benches, commit_throughput, snapshot_refresh);

fn main() {
    if let Ok(spec) = std::env::var("HOPGRAPH_BENCH_CHILD") {
        child(&spec);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
