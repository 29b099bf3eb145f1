//! Embedding throughput and latency harness.
//!
//! ```text
//! HOPGRAPH_EMBED_MODEL=DIR cargo bench -p hopgraph-embed --bench embed
//! python3 crates/hopgraph-embed/tools/bench_sentence_transformers.py DIR   # the baseline
//! ```
//!
//! Both embed the same generated corpus (`corpus` below and the Python script build the
//! same sentences from the same integer generator) with the same batch size, and time
//! one 40-word text alone. Without `HOPGRAPH_EMBED_MODEL` it runs on a tiny random model
//! (the numbers then only show the harness works). Options after `--`:
//! `--texts N` (default 1024), `--batch B` (default 32), `--rounds R` (default 3),
//! `--samples S` latency samples (default 200).

#![allow(
    clippy::cast_possible_truncation,
    reason = "percentile indexes of a 200-sample vector"
)]

use std::time::Instant;

use hopgraph_embed::Embedder;
use hopgraph_embed::tiny_model::TinyModel;

const WORDS: &str = "the graph stores memories of people places and events an agent \
    learns while it works with its users every fact links to the entities it mentions and \
    to other facts that support or contradict it so that recall can follow paths rather \
    than only match words queries ask what happened when who was involved and why a \
    decision was made the database keeps typed edges dense ids and immutable segments";

/// `count` sentences of 8 to 47 words: the same generator as the Python script's.
fn corpus(count: usize) -> Vec<String> {
    let words: Vec<&str> = WORDS.split_whitespace().collect();
    let mut state: u32 = 12345;
    let mut next = || {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
        (state >> 8) as usize
    };
    (0..count)
        .map(|_| {
            let len = 8 + next() % 40;
            (0..len)
                .map(|_| words[next() % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn forty_words() -> String {
    let words: Vec<&str> = WORDS.split_whitespace().collect();
    words
        .iter()
        .cycle()
        .take(40)
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// This process's user + system CPU time in seconds, from `/proc/self/stat` (Linux; 0 where
/// unavailable). On a loaded machine CPU time per text is steadier than wall time.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let after = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<f64>().ok()))
        .sum();
    ticks / 100.0 // USER_HZ is 100 on Linux
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(()); // `cargo bench -- --list` and `cargo test --benches` probes
    }
    let texts = arg("--texts", 1024);
    let batch = arg("--batch", 32);
    let rounds = arg("--rounds", 3);
    let samples = arg("--samples", 200).max(1);
    let tiny_dir = tempfile::tempdir()?;
    let embedder = match std::env::var_os("HOPGRAPH_EMBED_MODEL") {
        Some(dir) => Embedder::load(dir)?,
        None => {
            println!("HOPGRAPH_EMBED_MODEL unset: timing a tiny random model");
            TinyModel::default().write(tiny_dir.path())?;
            Embedder::load(tiny_dir.path())?
        }
    };
    let embedder = embedder.with_batch_size(batch);
    println!(
        "model {} dim {} window {} batch {batch} threads {}",
        embedder.model_id(),
        embedder.dimension(),
        embedder.max_tokens(),
        rayon::current_num_threads()
    );

    let corpus = corpus(texts);
    embedder.embed(&corpus[..batch.min(texts)])?; // warm-up
    let mut rates = Vec::new();
    let cpu_start = cpu_seconds();
    for _ in 0..rounds {
        let start = Instant::now();
        let out = embedder.embed(&corpus)?;
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(out.len(), texts);
        rates.push(texts as f64 / secs);
    }
    let cpu_ms_per_text = (cpu_seconds() - cpu_start) * 1000.0 / (rounds * texts) as f64;
    rates.sort_by(f64::total_cmp);
    println!(
        "throughput: {texts} texts, median {:.1} sentences/s (min {:.1}, max {:.1})",
        rates[rates.len() / 2],
        rates[0],
        rates[rates.len() - 1]
    );
    println!("cpu time: {cpu_ms_per_text:.2} ms per text (all threads)");

    let text = forty_words();
    println!("latency text: {} tokens", embedder.token_count(&text)?);
    for _ in 0..20 {
        embedder.embed_one(&text)?;
    }
    let cpu_start = cpu_seconds();
    let mut micros: Vec<f64> = (0..samples)
        .map(|_| {
            let start = Instant::now();
            let v = embedder.embed_one(&text);
            let t = start.elapsed().as_secs_f64() * 1e6;
            assert!(v.is_ok());
            t
        })
        .collect();
    let cpu_ms_per_call = (cpu_seconds() - cpu_start) * 1000.0 / samples as f64;
    micros.sort_by(f64::total_cmp);
    let at = |q: f64| micros[((micros.len() - 1) as f64 * q) as usize] / 1000.0;
    println!(
        "one 40-word text: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms",
        at(0.5),
        at(0.9),
        at(0.99)
    );
    println!("one 40-word text: {cpu_ms_per_call:.2} ms CPU per call (all threads)");
    Ok(())
}
