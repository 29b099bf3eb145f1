//! Vector search latency of an existing store, through the public API: the query is the
//! stored embedding of every `step`-th node (so it has the store's dimension and lies in
//! its distribution), 10 hits, default breadth; prints one JSON line with p50 / p99 in ms
//! and how many embeddings still await their HNSW graph (those are scanned exactly).
//!
//! ```text
//! vector_latency DB_DIR [QUERIES]     # default 200 queries
//! ```
//! Used to compare a store right after `hopgraph import` (graph deferred: exact scans)
//! with the same store after `hopgraph index`.

use std::time::Instant;

use hopgraph::{Database, NodeId, Options, VectorQuery};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1) else {
        return Err("usage: vector_latency DB_DIR [QUERIES]".into());
    };
    let queries: usize = args.get(2).map_or(Ok(200), |q| q.parse())?;
    let db = Database::open_with(dir, Options::default().read_only(true))?;
    let snap = db.snapshot();
    let ids: Vec<NodeId> = snap.node_ids().collect();
    let step = (ids.len() / queries.max(1)).max(1);
    let mut embeddings = Vec::new();
    for &id in ids.iter().step_by(step).take(queries) {
        if let Some(e) = snap.node(id)?.and_then(|n| n.props.embedding.clone()) {
            embeddings.push(e);
        }
    }
    if embeddings.is_empty() {
        return Err("the store holds no embeddings".into());
    }
    // One warm-up pass (page cache, scratch), then the timed one.
    for e in embeddings.iter().take(20) {
        snap.search_vector(&VectorQuery::new(e.clone()).limit(10))?;
    }
    let mut ms = Vec::with_capacity(embeddings.len());
    for e in &embeddings {
        let t = Instant::now();
        let hits = snap.search_vector(&VectorQuery::new(e.clone()).limit(10))?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(!hits.is_empty(), "a stored embedding finds at least itself");
    }
    ms.sort_by(f64::total_cmp);
    let at = |percent: usize| ms[(ms.len() - 1) * percent / 100];
    println!(
        "{{\"queries\": {}, \"p50_ms\": {:.3}, \"p99_ms\": {:.3}, \"awaiting_index\": {}}}",
        ms.len(),
        at(50),
        at(99),
        db.vectors_awaiting_index()
    );
    Ok(())
}
