//! Soak benchmark: the real `hopgraph-mcp` binary over stdio under agent-shaped traffic.
//!
//! Ignored by default (it takes minutes): run it with `--ignored`. `HOPGRAPH_SOAK_CALLS`
//! sets the number of calls (default 100,000), `HOPGRAPH_SOAK_LIVE` the live memories the
//! churn keeps (default 5,000), `HOPGRAPH_SOAK_SEED` the seed; a value that is not a number
//! fails the run. Measure a release build:
//!
//! ```text
//! HOPGRAPH_SOAK_CALLS=1000000 \
//!   cargo test --release -p hopgraph-mcp --test mcp soak -- --ignored --nocapture
//! ```
//!
//! Calls, one at a time as an agent makes them, per 100: create_memory 20, delete_memory
//! 20 (only once the live set is full; creates otherwise), link 13, memory_search 15,
//! get_memory 12, memory_path 8, expand 8, related 2, graph_stats 2. Once full, deletes
//! balance creates, so the live set stays near its size: what grows with time is only what
//! the server accumulates (log, segments, deleted data), which is what the per-window
//! figures are meant to show. Reports p50/p99/max
//! per 10,000 calls with the data directory's size, then disk usage against a fresh
//! database holding the same live memories and edges, then the first call after a
//! restart against warm calls.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::super::Server;

/// xorshift64*: small, seeded, good enough to pick calls.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap()
    }
}

const WORDS: [&str; 48] = [
    "deploy", "cache", "cold", "latency", "index", "user", "config", "timeout", "retry", "build",
    "test", "release", "graph", "memory", "agent", "plan", "error", "fix", "database", "schema",
    "query", "edge", "node", "path", "search", "vector", "token", "budget", "disk", "network",
    "server", "client", "session", "login", "report", "metric", "alert", "queue", "worker",
    "thread", "lock", "commit", "branch", "merge", "review", "design", "doc", "api",
];

fn text(rng: &mut Rng, words: usize) -> String {
    (0..words)
        .map(|_| WORDS[rng.below(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.len();
            }
        }
    }
    total
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// `name` as a number, `default` when unset; a value that does not parse fails the run
/// (a typo must not silently run the default).
fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Err(_) => default,
        Ok(v) => v
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v:?} is not a number: {e}")),
    }
}

/// The live set the client keeps in step with the server.
#[derive(Default)]
struct Live {
    ids: Vec<String>,
    pos: HashMap<String, usize>,
    content: HashMap<String, String>,
    /// (source, target, type) of live edges.
    edges: Vec<(String, String, String)>,
}

impl Live {
    fn add(&mut self, id: String, content: String) {
        self.pos.insert(id.clone(), self.ids.len());
        self.content.insert(id.clone(), content);
        self.ids.push(id);
    }
    fn remove(&mut self, i: usize) -> String {
        let id = self.ids.swap_remove(i);
        if let Some(moved) = self.ids.get(i) {
            self.pos.insert(moved.clone(), i);
        }
        self.pos.remove(&id);
        self.content.remove(&id);
        self.edges.retain(|(s, t, _)| *s != id && *t != id);
        id
    }
}

#[test]
#[ignore = "slow soak benchmark (minutes): cargo test --release -p hopgraph-mcp --test mcp \
            soak -- --ignored --nocapture (HOPGRAPH_SOAK_CALLS, _LIVE, _SEED: see the module)"]
fn soak() {
    let calls = env_usize("HOPGRAPH_SOAK_CALLS", 100_000);
    let live_target = env_usize("HOPGRAPH_SOAK_LIVE", 5_000);
    let seed = env_usize("HOPGRAPH_SOAK_SEED", 0x5eed) as u64;
    println!("soak: {calls} calls, {live_target} live memories, seed {seed:#x}");
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let mut s = Server::spawn_initialized(&data);
    let mut rng = Rng(seed | 1);
    let mut live = Live::default();
    let mut next_id = 0u64;
    let mut window = Vec::with_capacity(10_000);
    // With HOPGRAPH_TEST_SERVER_STDERR set, the server's log goes to that file.
    let server_log = std::env::var_os("HOPGRAPH_TEST_SERVER_STDERR");
    let mut log_seen = 0usize;
    let mut by_tool: HashMap<&str, Vec<Duration>> = HashMap::new();
    let mut worst: (Duration, &str) = (Duration::ZERO, "");
    let mut firsts = Vec::new();
    let mut lasts = (Duration::ZERO, Duration::ZERO);
    let edge_types = ["caused_by", "related_to", "supersedes", "contradicts"];
    println!("window      p50 ms  p99 ms  max ms  live  edges  disk MiB  slowest");
    for n in 0..calls {
        let roll = rng.below(100);
        let full = live.ids.len() >= live_target;
        let (tool, args) = if live.ids.len() < 2 || roll < 20 || (roll < 40 && !full) {
            next_id += 1;
            let id = format!("m{next_id}");
            let content = text(&mut rng, 30);
            live.add(id.clone(), content.clone());
            (
                "create_memory",
                json!({"type": "semantic", "id": id, "content": content,
                                     "title": text(&mut rng, 3), "importance": 0.5}),
            )
        } else if roll < 40 {
            let id = live.remove(rng.below(live.ids.len()));
            ("delete_memory", json!({"memory_id": id}))
        } else if roll < 53 {
            let a = live.ids[rng.below(live.ids.len())].clone();
            let b = live.ids[rng.below(live.ids.len())].clone();
            let t = edge_types[rng.below(4)];
            let dup = a == b || live.edges.iter().any(|e| e.0 == a && e.1 == b && e.2 == t);
            if !dup {
                live.edges.push((a.clone(), b.clone(), t.to_owned()));
            }
            (
                "link",
                json!({"source_id": a, "target_id": b, "edge_type": t}),
            )
        } else if roll < 68 {
            (
                "memory_search",
                json!({"query": text(&mut rng, 2), "limit": 10}),
            )
        } else if roll < 80 {
            (
                "get_memory",
                json!({"memory_id": live.ids[rng.below(live.ids.len())]}),
            )
        } else if roll < 88 {
            let a = &live.ids[rng.below(live.ids.len())];
            let b = &live.ids[rng.below(live.ids.len())];
            (
                "memory_path",
                json!({"from_id": a, "to_id": b, "max_hops": 4}),
            )
        } else if roll < 96 {
            let a = &live.ids[rng.below(live.ids.len())];
            (
                "expand",
                json!({"seed_doc_ids": [a], "hops": 2, "limit": 50}),
            )
        } else if roll < 98 {
            (
                "related",
                json!({"memory_id": live.ids[rng.below(live.ids.len())]}),
            )
        } else {
            ("graph_stats", json!({}))
        };
        let t = Instant::now();
        let r = s.request("tools/call", json!({"name": tool, "arguments": args}));
        let took = t.elapsed();
        let result = &r["result"];
        // A link of an existing triple or of a memory to itself may fail; nothing else may.
        if result["isError"] != json!(false) && tool != "link" {
            panic!("call {n}: {tool} {args} failed: {r}");
        }
        if took >= Duration::from_millis(50)
            && let Some(path) = &server_log
        {
            // What the server logged since the last slow call (its maintenance steps over
            // 50 ms), next to this call: which step, if any, the call waited for.
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let new = text.get(log_seen..).unwrap_or_default();
            println!(
                "slow call {n}: {tool} {} ms; server log since: {:?}",
                took.as_millis(),
                new.trim()
            );
            log_seen = text.len();
        }
        window.push(took);
        by_tool.entry(tool).or_default().push(took);
        if took > worst.0 {
            worst = (took, tool);
        }
        if window.len() == 10_000 || n + 1 == calls {
            window.sort();
            let (p50, p99, max) = (
                pct(&window, 0.5),
                pct(&window, 0.99),
                window[window.len() - 1],
            );
            if firsts.is_empty() {
                firsts.push((p50, p99));
            }
            lasts = (p50, p99);
            println!(
                "{:>7}  {:>7} {:>7} {:>7} {:>5} {:>6} {:>8.1}  {}",
                n + 1,
                ms(p50),
                ms(p99),
                ms(max),
                live.ids.len(),
                live.edges.len(),
                dir_bytes(&data) as f64 / f64::from(1 << 20),
                worst.1
            );
            window.clear();
            worst = (Duration::ZERO, "");
        }
    }
    assert!(s.close().success());
    let soaked = dir_bytes(&data);
    let mut tools: Vec<_> = by_tool.into_iter().collect();
    tools.sort_by_key(|(t, _)| *t);
    for (tool, mut d) in tools {
        d.sort();
        println!(
            "{tool:>14}: {:>7} calls, p50 {} p99 {} max {} ms",
            d.len(),
            ms(pct(&d, 0.5)),
            ms(pct(&d, 0.99)),
            ms(d[d.len() - 1])
        );
    }

    // The same live data written fresh.
    let fresh_dir = dir.path().join("fresh");
    let mut f = Server::spawn_initialized(&fresh_dir);
    let mut ids: Vec<&String> = live.ids.iter().collect();
    ids.sort();
    for id in ids {
        f.call_ok(
            "create_memory",
            json!({"type": "semantic", "id": id,
                                          "content": live.content[id], "importance": 0.5}),
        );
    }
    for (a, b, t) in &live.edges {
        f.call_ok(
            "link",
            json!({"source_id": a, "target_id": b, "edge_type": t}),
        );
    }
    assert!(f.close().success());
    let fresh = dir_bytes(&fresh_dir);
    println!(
        "disk after churn: {:.1} MiB; the same live data written fresh: {:.1} MiB; ratio {:.2}",
        soaked as f64 / f64::from(1 << 20),
        fresh as f64 / f64::from(1 << 20),
        soaked as f64 / fresh.max(1) as f64
    );
    if let Some((p50, p99)) = firsts.first() {
        println!(
            "first window p50 {} p99 {}; last window p50 {} p99 {}; p99 ratio {:.2}",
            ms(*p50),
            ms(*p99),
            ms(lasts.0),
            ms(lasts.1),
            lasts.1.as_secs_f64() / p99.as_secs_f64()
        );
    }

    // First call after a restart against warm calls.
    let mut r = Server::spawn_initialized(&data);
    let probe = live.ids.first().cloned().unwrap_or_default();
    let time = |r: &mut Server, tool: &str, args: Value| {
        let t = Instant::now();
        r.call_ok(tool, args);
        t.elapsed()
    };
    let first_get = time(&mut r, "get_memory", json!({"memory_id": probe}));
    let first_search = time(&mut r, "memory_search", json!({"query": "deploy cache"}));
    let mut warm_get: Vec<Duration> = (0..50)
        .map(|_| time(&mut r, "get_memory", json!({"memory_id": probe})))
        .collect();
    let mut warm_search: Vec<Duration> = (0..50)
        .map(|_| time(&mut r, "memory_search", json!({"query": "deploy cache"})))
        .collect();
    warm_get.sort();
    warm_search.sort();
    println!(
        "after restart: first get_memory {} ms (warm median {} ms), first memory_search {} ms \
         (warm median {} ms)",
        ms(first_get),
        ms(pct(&warm_get, 0.5)),
        ms(first_search),
        ms(pct(&warm_search, 0.5))
    );
    assert!(r.close().success());
}
