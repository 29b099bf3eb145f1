//! Text search harness for `benches/compare/text` (hopgraph vs SQLite FTS5): builds a
//! database from a JSON-lines corpus and times queries in-process.
//!
//! ```text
//! text_bench build DB_DIR docs.jsonl        # {"key","title","content"} per line
//! text_bench bulk DB_DIR docs.jsonl         # the same through the bulk loader
//! text_bench query DB_DIR queries.jsonl     # {"q", ...} per line; prints one JSON line
//!                                           # per query: {"ms": .., "cpu_ms": ..,
//!                                           # "keys": [top 10]}
//! text_bench answers DB_DIR queries.jsonl   # per query, untimed: the top 10 and the top
//!                                           # 100 as node ids with scores' exact bits
//! ```
//! `build` prints `{"build_s": ..}` (commits of 5,000 nodes with buffered durability, then a
//! checkpoint so the text index is in a segment); `bulk` loads every document with one
//! `Database::bulk_load` (one segment, no WAL traffic: what an import of a new store
//! does) and prints `{"build_s": ..}` too. `query` runs every query once to warm
//! up, then times each query (search plus reading the hits' keys); with
//! `TEXT_BENCH_SNIPPETS=0` the hits carry no snippets (keys only, as tantivy's pass).

use std::io::{BufRead, BufReader, Write};
use std::time::Instant;

use hopgraph::{BulkLoad, Database, Durability, NodeProps, Options, TextQuery, WriteBatch};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn lines(path: &str) -> Res<Vec<serde_json::Value>> {
    let f = BufReader::new(std::fs::File::open(path)?);
    let mut out = Vec::new();
    for l in f.lines() {
        out.push(serde_json::from_str(&l?)?);
    }
    Ok(out)
}

fn field<'a>(v: &'a serde_json::Value, k: &str) -> &'a str {
    v.get(k).and_then(|x| x.as_str()).unwrap_or("")
}

/// A corpus document as node properties: kind `doc`, its title and content.
fn doc_props(d: &serde_json::Value) -> NodeProps {
    NodeProps {
        kind: "doc".into(),
        title: field(d, "title").into(),
        content: field(d, "content").into(),
        ..NodeProps::default()
    }
}

/// This thread's CPU time in milliseconds (Linux: `CLOCK_THREAD_CPUTIME_ID`; elsewhere
/// 0): on a shared host a query's wall time includes whatever ran while it waited for a
/// core, its CPU time does not.
fn thread_cpu_ms() -> f64 {
    #[cfg(target_os = "linux")]
    {
        #[repr(C)]
        struct Timespec {
            sec: i64,
            nsec: i64,
        }
        unsafe extern "C" {
            fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
        }
        const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
        let mut ts = Timespec { sec: 0, nsec: 0 };
        // SAFETY: clock_gettime (libc, which std links on Linux) writes one timespec (two
        // 64-bit fields on the 64-bit targets this harness runs on) to a valid pointer.
        let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &raw mut ts) };
        if rc == 0 {
            return ts.sec as f64 * 1e3 + ts.nsec as f64 / 1e6;
        }
    }
    0.0
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, mode, dir, file] = args.as_slice() else {
        return Err("usage: text_bench build|bulk|query|answers DB_DIR FILE".into());
    };
    let db = Database::open_with(dir, Options::default().durability(Durability::Buffered))?;
    let out = std::io::stdout();
    let mut out = out.lock();
    match mode.as_str() {
        "build" => {
            let docs = lines(file)?;
            let t = Instant::now();
            let mut b = WriteBatch::new();
            for (i, d) in docs.iter().enumerate() {
                b.upsert_node(field(d, "key"), doc_props(d));
                if (i + 1) % 5_000 == 0 {
                    db.commit(std::mem::take(&mut b))?;
                }
            }
            db.commit(b)?;
            db.checkpoint()?;
            writeln!(out, "{{\"build_s\": {}}}", t.elapsed().as_secs_f64())?;
        }
        "bulk" => {
            let docs = lines(file)?;
            let t = Instant::now();
            let mut load = BulkLoad::new();
            for d in &docs {
                load.node(field(d, "key"), doc_props(d))?;
            }
            db.bulk_load(load)?;
            writeln!(out, "{{\"build_s\": {}}}", t.elapsed().as_secs_f64())?;
        }
        "query" => {
            let qs = lines(file)?;
            let snap = db.snapshot();
            // TEXT_BENCH_SNIPPETS=0: keys only, as tantivy's pass returns them.
            let snippets = std::env::var("TEXT_BENCH_SNIPPETS").map_or(true, |v| v != "0");
            let run = |q: &str| -> Res<Vec<String>> {
                let hits = snap.search_text(&TextQuery::new(q).limit(10).snippets(snippets))?;
                let mut keys = Vec::with_capacity(hits.len());
                // The keys only, as tantivy's pass reads its one stored field: the
                // records' other fields are not decoded.
                for h in hits {
                    if let Some((key, _title)) = snap.node_label(h.node)? {
                        keys.push(key.to_owned());
                    }
                }
                Ok(keys)
            };
            for q in &qs {
                run(field(q, "q"))?;
            }
            for q in &qs {
                let (t, cpu) = (Instant::now(), thread_cpu_ms());
                let keys = run(field(q, "q"))?;
                let (ms, cpu_ms) = (t.elapsed().as_secs_f64() * 1e3, thread_cpu_ms() - cpu);
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({"ms": ms, "cpu_ms": cpu_ms, "keys": keys})
                )?;
            }
        }
        "answers" => {
            // Byte-comparable answers of two builds: node ids and the scores' bits, and
            // for the top 10 each hit's field and snippet.
            let snap = db.snapshot();
            for q in &lines(file)? {
                for limit in [10, 100] {
                    let hits = snap.search_text(&TextQuery::new(field(q, "q")).limit(limit))?;
                    let ranked: Vec<String> = hits
                        .iter()
                        .map(|h| format!("{}:{:016x}", h.node.0, h.score.to_bits()))
                        .collect();
                    writeln!(out, "{limit} {}", ranked.join(" "))?;
                    if limit == 10 {
                        for h in &hits {
                            writeln!(out, "  {} {:?}", h.field.name(), h.snippet)?;
                        }
                    }
                }
            }
        }
        _ => return Err(format!("unknown mode {mode}").into()),
    }
    Ok(())
}
