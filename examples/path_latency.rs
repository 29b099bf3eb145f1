//! Key-level shortest-path latency of an existing store, through the public API: the
//! same calls the Python binding makes (`Database::shortest_path`, a fresh snapshot per
//! call, and `Snapshot::shortest_path` on one snapshot), undirected, every edge type, at
//! most 10 hops, each pair of a pairs file timed once per round (best round's p50 kept).
//! Prints one JSON line of p50 / p90 / p99 in microseconds per form.
//!
//! ```text
//! path_latency DB_DIR PAIRS_TSV [ROUNDS]     # default 3 rounds
//! ```
//! The Rust side of `crates/hopgraph-py/bench/paths.py`.

use std::time::Instant;

use hopgraph::{Database, Options, PathSpec};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn percentiles(mut us: Vec<f64>) -> [f64; 3] {
    us.sort_by(f64::total_cmp);
    let at = |percent: usize| us[(us.len() - 1) * percent / 100];
    [at(50), at(90), at(99)]
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(pairs)) = (args.get(1), args.get(2)) else {
        return Err("usage: path_latency DB_DIR PAIRS_TSV [ROUNDS]".into());
    };
    let rounds: usize = args.get(3).map_or(Ok(3), |r| r.parse())?;
    let pairs: Vec<(String, String)> = std::fs::read_to_string(pairs)?
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            Some((f.next()?.to_owned(), f.next()?.to_owned()))
        })
        .collect();
    if pairs.is_empty() {
        return Err("no pairs".into());
    }
    let db = Database::open_with(dir, Options::default().read_only(true))?;
    let spec = PathSpec::new().max_hops(10);
    let mut best: [Option<[f64; 3]>; 2] = [None, None];
    for _ in 0..rounds.max(1) {
        for (form, slot) in best.iter_mut().enumerate() {
            let snap = db.snapshot();
            let mut us = Vec::with_capacity(pairs.len());
            for (a, b) in &pairs {
                let t = Instant::now();
                let found = if form == 0 {
                    db.shortest_path(a, b, &spec)?
                } else {
                    snap.shortest_path(a, b, &spec)?
                };
                us.push(t.elapsed().as_secs_f64() * 1e6);
                std::hint::black_box(found);
            }
            let p = percentiles(us);
            if slot.is_none_or(|s| p[0] < s[0]) {
                *slot = Some(p);
            }
        }
    }
    let show = |p: Option<[f64; 3]>| {
        let p = p.unwrap_or_default();
        format!(
            "{{\"p50_us\": {:.2}, \"p90_us\": {:.2}, \"p99_us\": {:.2}}}",
            p[0], p[1], p[2]
        )
    };
    println!(
        "{{\"pairs\": {}, \"database\": {}, \"snapshot\": {}}}",
        pairs.len(),
        show(best[0]),
        show(best[1])
    );
    Ok(())
}
