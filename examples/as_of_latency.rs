//! What a read "as of" a moment costs against the same read without one, on one store in
//! one run (rounds alternate the two forms; the best round's percentiles are kept).
//!
//! ```text
//! as_of_latency end DB_DIR PERCENT      # end PERCENT% of the edges (by a hash of the id) now
//! as_of_latency delete DB_DIR PERCENT   # delete the same edges instead
//! as_of_latency bench DB_DIR PAIRS_TSV [ROUNDS]
//! as_of_latency compare DB_ENDED DB_DELETED PAIRS_TSV [ROUNDS]
//! ```
//! `compare` times the as-of form on a store with ended edges against the untimed form on
//! one where the same edges were deleted: the same graph, so the same answers, and the
//! ratio is what the time filter costs.
//! `end` compacts the store (so it is in the current format), commits
//! `WriteBatch::end_edge` for every edge whose id hashes below PERCENT (in batches), then
//! checkpoints and compacts. `bench` times each pair's undirected shortest path (every
//! type, at most 10 hops) on one snapshot without a moment and as of now + 1 s, and prints
//! one JSON line: p50/p90/p99 in microseconds per form, their p50 ratio, and how many
//! pairs found a path in each form (ended edges make some paths longer or absent).

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hopgraph::{Database, Direction, Options, PathSpec, TypeFilter, WriteBatch};

const USAGE: &str = "usage: as_of_latency end DB_DIR PERCENT | delete DB_DIR PERCENT | \
                     bench DB_DIR PAIRS_TSV [ROUNDS] | compare DB_TIMED DB_DELETED PAIRS_TSV [ROUNDS]";

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn percentiles(mut us: Vec<f64>) -> [f64; 3] {
    us.sort_by(f64::total_cmp);
    let at = |percent: usize| us[(us.len() - 1) * percent / 100];
    [at(50), at(90), at(99)]
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// SplitMix64's finalizer: which edges end does not follow id order.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Ends (`remove` false) or deletes (`remove` true) PERCENT% of the edges.
fn end(dir: &str, percent: u64, remove: bool) -> Res<()> {
    let db = Database::open(dir)?;
    // In the current format first (a store written before intervals has unknown starts
    // and every "as of" read checks every element).
    db.compact()?;
    let snap = db.snapshot();
    let at = now_ms();
    let mut batch = WriteBatch::new();
    let (mut ended, mut edges) = (0u64, 0u64);
    for id in snap.node_ids() {
        for n in snap.neighbors(id, Direction::Out, &TypeFilter::All) {
            edges += 1;
            if mix(n.edge.0) % 100 < percent {
                if remove {
                    batch.unlink(n.edge);
                } else {
                    batch.end_edge(n.edge, at);
                }
                ended += 1;
                if batch.len() == 500_000 {
                    db.commit(std::mem::take(&mut batch))?;
                }
            }
        }
    }
    db.commit(batch)?;
    db.checkpoint()?;
    // One segment again, the ends folded into its rows (as a store that has been
    // compacted since).
    db.compact()?;
    println!("{{\"edges\": {edges}, \"ended\": {ended}}}");
    Ok(())
}

/// Times the untimed form on `base` (the store itself, or one where the ended edges are
/// deleted instead) and the as-of form on `dir`.
fn bench(dir: &str, base: &str, pairs: &str, rounds: usize) -> Res<()> {
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
    let base_db = Database::open_with(base, Options::default().read_only(true))?;
    let snaps = [base_db.snapshot(), db.snapshot()];
    let specs = [
        PathSpec::new().max_hops(10),
        PathSpec::new().max_hops(10).as_of(now_ms() + 1000),
    ];
    let mut best: [Option<[f64; 3]>; 2] = [None, None];
    let mut found = [0usize; 2];
    for _ in 0..rounds.max(1) {
        for (form, spec) in specs.iter().enumerate() {
            let mut us = Vec::with_capacity(pairs.len());
            found[form] = 0;
            for (a, b) in &pairs {
                let t = Instant::now();
                let path = snaps[form].shortest_path(a, b, spec)?;
                us.push(t.elapsed().as_secs_f64() * 1e6);
                found[form] += usize::from(path.is_some());
                std::hint::black_box(path);
            }
            let p = percentiles(us);
            if best[form].is_none_or(|s| p[0] < s[0]) {
                best[form] = Some(p);
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
    let ratio = best[1].map_or(0.0, |b| b[0]) / best[0].map_or(1.0, |b| b[0]);
    println!(
        "{{\"pairs\": {}, \"untimed\": {}, \"as_of\": {}, \"p50_ratio\": {ratio:.3}, \"found\": [{}, {}]}}",
        pairs.len(),
        show(best[0]),
        show(best[1]),
        found[0],
        found[1]
    );
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    match (args.get(1).map(String::as_str), args.get(2), args.get(3)) {
        (Some("end"), Some(dir), Some(p)) => end(dir, p.parse()?, false),
        (Some("delete"), Some(dir), Some(p)) => end(dir, p.parse()?, true),
        (Some("bench"), Some(dir), Some(pairs)) => {
            bench(dir, dir, pairs, args.get(4).map_or(Ok(5), |r| r.parse())?)
        }
        (Some("compare"), Some(dir), Some(base)) => match args.get(4) {
            Some(pairs) => bench(dir, base, pairs, args.get(5).map_or(Ok(5), |r| r.parse())?),
            None => Err("compare needs a pairs file".into()),
        },
        _ => Err(USAGE.into()),
    }
}
