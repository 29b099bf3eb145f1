//! A streaming Kronecker workload generator: graphs of any scale in the edge distribution
//! and file layout of the shared generator's `kron` family (`benches/workload/gen_graph.py
//! kron`), in memory proportional to the node count, not the edge count.
//!
//! ```text
//! cargo run --release --example gen_kron -- --scale 26 --out /data/kron26
//! cargo run --release --example gen_kron -- --scale 26 --out /data/kron26 --edges-to-stdout \
//!     | hopgraph import --db /data/kron26.hg -        # no edge file on disk
//! ```
//!
//! # What it writes (the layout of `gen_graph.py kron`, no header lines)
//! - `PREFIX.edges.tsv` (or standard output with `--edges-to-stdout`): one directed edge
//!   per line, `src<TAB>dst<TAB>type`, ids decimal integers in `[0, 2^scale)`, types
//!   `caused_by`, `contradicts`, `supersedes`, `related_to`.
//! - `PREFIX.pairs.tsv`: `--pairs` query pairs `src<TAB>dst` (src != dst), uniform with
//!   replacement over the nodes with degree > 0.
//! - `PREFIX.meta.json`: parameters, counts, per-type counts (no file hashes: run
//!   `sha256sum` on the outputs if you need them).
//!
//! # The distribution (the same as `gen_graph.py kron`; not the same bytes)
//! Each of the `edge_factor * 2^scale` raw edges picks, at every one of `scale` levels,
//! a quadrant of the adjacency matrix with the Graph500 probabilities A, B, C, D = 0.57,
//! 0.19, 0.19, 0.05 (drawn as the Graph500 reference does: the row bit with P = C + D, the
//! column bit conditioned on it); ids then go through a random permutation of
//! `[0, 2^scale)`; the type is drawn with P = 0.15, 0.05, 0.10, 0.70. Self-loops are
//! dropped, and so are repeated (src, dst, type) triples, the first occurrence kept.
//! Differences from the numpy generator, none of which changes the distribution:
//! - The random numbers come from splitmix64 streams, one per chunk of 2^16 raw edges
//!   (so chunks are generated on all cores and regenerated identically), not numpy's PCG64:
//!   the same seed gives other bytes than `gen_graph.py`.
//! - The node permutation is a keyed Feistel network on `scale` bits (with cycle walking)
//!   instead of a stored shuffled array: a pseudo-random bijection in no memory.
//! - The shared generator also permutes the edge order; the raw edges are independent and
//!   identically distributed, so any fixed order of them has the same distribution, and
//!   this one writes them in generation order.
//!
//! # Memory
//! A bit per raw edge (the "kept" set of the duplicate removal; 128 MiB at scale 26) and
//! four bytes per node (degrees, for the pairs and the meta file), plus the duplicate
//! removal's buckets: with `--dedupe exact` (the default) the raw edges are split by a hash
//! of their triple into as many buckets as `--memory-limit` needs (32 bytes per raw edge
//! of a bucket), and every bucket costs one more generation pass. `--dedupe none` skips
//! that and writes repeated triples as they come (only self-loops are dropped): hopgraph's
//! import drops repeats itself, first occurrence kept, so the imported graph is the same.
//!
//! The same arguments give the same bytes whatever the thread count and memory limit.

#![allow(
    clippy::cast_possible_truncation,
    reason = "ids below 2^scale <= 2^30 and counts below 2^40 fit the types they are cast to"
)]

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::time::Instant;

/// Edge type names, in the shared generator's order.
const TYPE_NAMES: [&str; 4] = ["caused_by", "contradicts", "supersedes", "related_to"];
/// Type probabilities.
const TYPE_P: [f64; 4] = [0.15, 0.05, 0.10, 0.70];
/// Graph500 initiator probabilities A, B, C (D = 1 - A - B - C).
const A: f64 = 0.57;
const B: f64 = 0.19;
const C: f64 = 0.19;
/// Raw edges per random stream: the unit of parallel generation.
const CHUNK: u64 = 1 << 16;
/// Chunks formatted per window of the write pass (spread over the threads).
const WINDOW_CHUNKS: u64 = 64;
/// Scales above this do not fit the triple key (2 * scale + 2 bits) in a u64.
const SCALE_MAX: u32 = 30;

fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) if e == "help" => {
            println!("{USAGE}\n\n{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("gen_kron: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen_kron: {e}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "usage: gen_kron --scale S --out PREFIX [--edge-factor 16] [--seed 1] \
[--pairs 1000] [--dedupe exact|none] [--memory-limit BYTES] [--threads N] [--edges-to-stdout]";

const HELP: &str = "Writes a Kronecker graph (Graph500 A,B,C,D = 0.57,0.19,0.19,0.05, types \
caused_by/contradicts/supersedes/related_to with P 0.15/0.05/0.10/0.70, self-loops and repeated \
triples dropped) as PREFIX.edges.tsv, PREFIX.pairs.tsv and PREFIX.meta.json, in the layout of \
gen_graph.py kron, in memory proportional to the node count.

  --scale S            2^S node ids (1..=30)
  --edge-factor F      raw edges per node id (default 16)
  --seed N             the random seed (default 1); same arguments, same bytes
  --pairs Q            query pairs to write (default 1000; 0: none)
  --dedupe exact|none  exact (default): repeated triples removed, first kept, one extra
                       generation pass per bucket; none: left in (hopgraph import drops them)
  --memory-limit B     bytes for the duplicate removal's buckets and bit sets (default 4 GiB)
  --threads N          generator threads (default: all cores)
  --edges-to-stdout    edges to standard output instead of PREFIX.edges.tsv, e.g. piped
                       into `hopgraph import --db DIR -`";

/// Command-line arguments.
#[derive(Clone, Debug)]
struct Args {
    scale: u32,
    edge_factor: u64,
    seed: u64,
    out: String,
    pairs: usize,
    dedupe: bool,
    memory_limit: u64,
    threads: usize,
    edges_to_stdout: bool,
}

impl Args {
    fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
        let mut a = Args {
            scale: 0,
            edge_factor: 16,
            seed: 1,
            out: String::new(),
            pairs: 1000,
            dedupe: true,
            memory_limit: 4 << 30,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            edges_to_stdout: false,
        };
        while let Some(flag) = it.next() {
            if flag == "--edges-to-stdout" {
                a.edges_to_stdout = true;
                continue;
            }
            if flag == "--help" || flag == "-h" {
                return Err("help".into());
            }
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let num = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| format!("{flag}: not a number: {v}"))
            };
            match flag.as_str() {
                "--scale" => a.scale = num(&value)? as u32,
                "--edge-factor" => a.edge_factor = num(&value)?,
                "--seed" => a.seed = num(&value)?,
                "--out" => a.out = value,
                "--pairs" => a.pairs = num(&value)? as usize,
                "--threads" => a.threads = (num(&value)? as usize).max(1),
                "--memory-limit" => a.memory_limit = num(&value)?,
                "--dedupe" => {
                    a.dedupe = match value.as_str() {
                        "exact" => true,
                        "none" => false,
                        _ => return Err(format!("--dedupe: exact or none, not {value}")),
                    }
                }
                _ => return Err(format!("unknown argument {flag}")),
            }
        }
        if !(1..=SCALE_MAX).contains(&a.scale) {
            return Err(format!("--scale must be in 1..={SCALE_MAX}"));
        }
        if a.out.is_empty() {
            return Err("--out PREFIX is required".into());
        }
        if !(1..=1024).contains(&a.edge_factor) {
            return Err("--edge-factor must be in 1..=1024".into());
        }
        Ok(a)
    }
}

/// splitmix64 (Steele, Lea, Flood 2014).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
}

/// splitmix64's output function: a good 64-bit hash.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `p` as a threshold on a uniform u32: `u < threshold(p)` has probability `p` (to 2^-32).
fn threshold(p: f64) -> u64 {
    (p * 4_294_967_296.0).round() as u64
}

/// The parameters every pass needs to regenerate the same raw edges.
#[derive(Clone, Copy, Debug)]
struct Gen {
    scale: u32,
    seed: u64,
    raw_edges: u64,
    /// P(row bit = 1) = C + D, as a u32 threshold (the bit is set when u >= 1 - (C + D)).
    row_ab: u64,
    /// P(column bit = 0 | row bit = 0) = A / (A + B).
    col_a: u64,
    /// P(column bit = 0 | row bit = 1) = C / (C + D).
    col_c: u64,
    /// Cumulative type probabilities as u32 thresholds.
    types: [u64; 3],
    /// Round keys of the node permutation.
    keys: [u64; 4],
}

impl Gen {
    fn new(scale: u32, edge_factor: u64, seed: u64) -> Gen {
        let ab = A + B;
        let mut cum = 0.0;
        let mut types = [0u64; 3];
        for (t, p) in types.iter_mut().zip(TYPE_P) {
            cum += p;
            *t = threshold(cum);
        }
        let mut keys = [0u64; 4];
        let mut rng = SplitMix64(mix(seed ^ 0x5EED_F00D_0000_0001));
        for k in &mut keys {
            *k = rng.next_u64();
        }
        Gen {
            scale,
            seed,
            raw_edges: edge_factor << scale,
            row_ab: threshold(ab),
            col_a: threshold(A / ab),
            col_c: threshold(C / (1.0 - ab)),
            types,
            keys,
        }
    }

    fn chunks(&self) -> u64 {
        self.raw_edges.div_ceil(CHUNK)
    }

    /// The random stream of chunk `c`.
    fn chunk_rng(&self, c: u64) -> SplitMix64 {
        SplitMix64(mix(self.seed.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ mix(c)))
    }

    /// The chunk's raw edges: `chunk_rng(c)`, then `draw` once per raw index.
    fn raw_range(&self, c: u64) -> std::ops::Range<u64> {
        c * CHUNK..((c + 1) * CHUNK).min(self.raw_edges)
    }

    /// One raw edge before the node permutation: (row, column, type).
    fn draw(&self, rng: &mut SplitMix64) -> (u32, u32, u8) {
        let (mut i, mut j) = (0u32, 0u32);
        for bit in 0..self.scale {
            let r = rng.next_u64();
            let (u, v) = (r >> 32, r & 0xFFFF_FFFF);
            let row = u >= self.row_ab;
            let col = v >= if row { self.col_c } else { self.col_a };
            i |= u32::from(row) << bit;
            j |= u32::from(col) << bit;
        }
        let u = rng.next_u64() >> 32;
        let t = self.types.iter().take_while(|&&x| u >= x).count() as u8;
        (i, j, t)
    }

    /// Calls `f(raw index, src, dst, type)` for every raw edge of chunk `c` that is not a
    /// self-loop, ids already permuted.
    fn chunk(&self, c: u64, mut f: impl FnMut(u64, u32, u32, u8)) {
        let mut rng = self.chunk_rng(c);
        for idx in self.raw_range(c) {
            let (i, j, t) = self.draw(&mut rng);
            if i != j {
                f(idx, self.permute(i), self.permute(j), t);
            }
        }
    }

    /// A keyed bijection of `[0, 2^scale)`: a 4-round Feistel network on the next even
    /// number of bits, walked again while the result falls outside the range.
    fn permute(&self, x: u32) -> u32 {
        let half = self.scale.div_ceil(2);
        let mask = (1u64 << half) - 1;
        let mut v = u64::from(x);
        loop {
            let (mut l, mut r) = (v >> half, v & mask);
            for k in self.keys {
                let f = mix(r ^ k) & mask;
                (l, r) = (r, l ^ f);
            }
            v = (l << half) | r;
            if v < 1u64 << self.scale {
                return v as u32;
            }
        }
    }

    /// The triple as one u64 (2 * scale + 2 bits).
    fn key(&self, s: u32, d: u32, t: u8) -> u64 {
        (((u64::from(s) << self.scale) | u64::from(d)) << 2) | u64::from(t)
    }
}

/// One bit per raw edge.
struct BitSet(Vec<u64>);

impl BitSet {
    fn new(bits: u64) -> BitSet {
        BitSet(vec![0; bits.div_ceil(64) as usize])
    }
    fn set(&mut self, i: u64) {
        self.0[(i / 64) as usize] |= 1 << (i % 64);
    }
    fn get(&self, i: u64) -> bool {
        self.0[(i / 64) as usize] & (1 << (i % 64)) != 0
    }
}

/// The raw edges to keep: the first occurrence of every triple (self-loops are never
/// generated into the set). `buckets` passes, each over the edges whose hashed triple
/// falls in it, sorted by (triple, index) so the first of each run of equals is marked.
fn first_occurrences(g: &Gen, buckets: u64, threads: usize, progress: bool) -> BitSet {
    let mut keep = BitSet::new(g.raw_edges);
    for b in 0..buckets {
        let t0 = Instant::now();
        let mut entries: Vec<(u64, u64)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads as u64)
                .map(|t| {
                    s.spawn(move || {
                        let mut v = Vec::new();
                        let mut c = t;
                        while c < g.chunks() {
                            g.chunk(c, |idx, s, d, ty| {
                                let k = g.key(s, d, ty);
                                if mix(k) % buckets == b {
                                    v.push((k, idx));
                                }
                            });
                            c += threads as u64;
                        }
                        v
                    })
                })
                .collect();
            let mut all = Vec::new();
            for h in handles {
                // A generator thread only pushes to its own vector; it cannot panic short
                // of running out of memory, which aborts anyway.
                let part = h.join().unwrap_or_default();
                if all.is_empty() {
                    all = part;
                } else {
                    all.extend_from_slice(&part);
                }
            }
            all
        });
        entries.sort_unstable();
        let mut last = None;
        for &(k, idx) in &entries {
            if last != Some(k) {
                keep.set(idx);
                last = Some(k);
            }
        }
        if progress {
            eprintln!(
                "gen_kron: duplicates, bucket {}/{buckets}: {} raw edges, {:.1}s",
                b + 1,
                entries.len(),
                t0.elapsed().as_secs_f64()
            );
        }
    }
    keep
}

/// Counts of what was written.
#[derive(Debug, Default, PartialEq, Eq)]
struct Written {
    edges: u64,
    type_counts: [u64; 4],
}

/// One thread's share of a window: the lines' text and the edges they name.
type Formatted = (Vec<u8>, Vec<(u32, u32, u8)>);

/// Writes the kept edges in raw order to `out` and counts degrees (indexed by output id).
fn write_edges(
    g: &Gen,
    keep: Option<&BitSet>,
    threads: usize,
    degree: &mut [u32],
    out: &mut dyn Write,
    progress: bool,
) -> io::Result<Written> {
    let mut w = Written::default();
    let chunks = g.chunks();
    let per = WINDOW_CHUNKS.max(threads as u64);
    let t0 = Instant::now();
    let mut next_report = 0u64;
    let mut start = 0u64;
    while start < chunks {
        let end = (start + per).min(chunks);
        let span = (end - start).div_ceil(threads as u64);
        let parts: Vec<Formatted> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads as u64)
                .map(|t| {
                    let (lo, hi) = (
                        (start + t * span).min(end),
                        (start + (t + 1) * span).min(end),
                    );
                    s.spawn(move || {
                        let mut text = Vec::new();
                        let mut edges = Vec::new();
                        for c in lo..hi {
                            g.chunk(c, |idx, s, d, ty| {
                                if keep.is_none_or(|k| k.get(idx)) {
                                    push_decimal(&mut text, s);
                                    text.push(b'\t');
                                    push_decimal(&mut text, d);
                                    text.push(b'\t');
                                    text.extend_from_slice(TYPE_NAMES[ty as usize].as_bytes());
                                    text.push(b'\n');
                                    edges.push((s, d, ty));
                                }
                            });
                        }
                        (text, edges)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        for (text, edges) in parts {
            out.write_all(&text)?;
            for (s, d, ty) in edges {
                degree[s as usize] = degree[s as usize].saturating_add(1);
                degree[d as usize] = degree[d as usize].saturating_add(1);
                w.type_counts[ty as usize] += 1;
                w.edges += 1;
            }
        }
        start = end;
        if progress && start * CHUNK >= next_report {
            eprintln!(
                "gen_kron: wrote {} of ~{} raw edges' worth, {} edges, {:.0}s",
                (start * CHUNK).min(g.raw_edges),
                g.raw_edges,
                w.edges,
                t0.elapsed().as_secs_f64()
            );
            next_report += g.raw_edges / 20 + 1;
        }
    }
    out.flush()?;
    Ok(w)
}

/// Appends `v` in decimal.
fn push_decimal(buf: &mut Vec<u8>, mut v: u32) {
    let mut digits = [0u8; 10];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend(digits[..n].iter().rev());
}

/// `q` pairs (src != dst) uniform with replacement over the nodes with a degree, drawn by
/// rejection (the caller checks that at least two nodes have one).
fn pairs(degree: &[u32], q: usize, seed: u64) -> Vec<(u32, u32)> {
    let mut rng = SplitMix64(mix(seed ^ 0x9A12_5000_0000_0000));
    let n = degree.len() as u64;
    let mut pick = || loop {
        let v = ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as usize;
        if degree[v] > 0 {
            return v as u32;
        }
    };
    (0..q)
        .map(|_| {
            let s = pick();
            let mut d = pick();
            while d == s {
                d = pick();
            }
            (s, d)
        })
        .collect()
}

/// Buckets so that one bucket's entries (32 bytes each while sorting) fit what the limit
/// leaves after the kept-bit set and the degree array.
fn bucket_count(g: &Gen, memory_limit: u64) -> Result<u64, String> {
    let fixed = g.raw_edges / 8 + (4u64 << g.scale) + (64 << 20);
    let room = memory_limit.checked_sub(fixed).filter(|&r| r >= 64 << 20).ok_or_else(|| {
        format!(
            "--memory-limit {memory_limit} is too small for scale {}: the kept-edge bits and the \
             degrees need {fixed} bytes, and the duplicate removal at least 64 MiB more",
            g.scale
        )
    })?;
    Ok((g.raw_edges * 32).div_ceil(room).max(1))
}

fn run(a: &Args) -> Result<(), String> {
    let t0 = Instant::now();
    let g = Gen::new(a.scale, a.edge_factor, a.seed);
    let keep = if a.dedupe {
        let buckets = bucket_count(&g, a.memory_limit)?;
        eprintln!(
            "gen_kron: scale {}, {} raw edges, duplicates removed in {buckets} pass(es)",
            a.scale, g.raw_edges
        );
        Some(first_occurrences(&g, buckets, a.threads, true))
    } else {
        None
    };
    let mut degree = vec![0u32; 1usize << a.scale];
    let edges_path = format!("{}.edges.tsv", a.out);
    let written = if a.edges_to_stdout {
        let stdout = io::stdout();
        let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
        write_edges(&g, keep.as_ref(), a.threads, &mut degree, &mut out, true)
    } else {
        let file = std::fs::File::create(&edges_path)
            .map_err(|e| format!("cannot create {edges_path}: {e}"))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        write_edges(&g, keep.as_ref(), a.threads, &mut degree, &mut out, true)
    }
    .map_err(|e| format!("writing the edges: {e}"))?;
    drop(keep);
    let with_degree = degree.iter().filter(|&&d| d > 0).count();
    let max_degree = degree.iter().copied().max().unwrap_or(0);
    let mut files = Vec::new();
    if !a.edges_to_stdout {
        files.push(("edges", edges_path));
    }
    if a.pairs > 0 {
        if with_degree < 2 {
            return Err("fewer than two nodes have an edge: no pairs to draw".into());
        }
        let path = format!("{}.pairs.tsv", a.out);
        let mut text = Vec::new();
        for (s, d) in pairs(&degree, a.pairs, a.seed) {
            push_decimal(&mut text, s);
            text.push(b'\t');
            push_decimal(&mut text, d);
            text.push(b'\n');
        }
        std::fs::write(&path, text).map_err(|e| format!("cannot write {path}: {e}"))?;
        files.push(("pairs", path));
    }
    let types: Vec<String> = TYPE_NAMES
        .iter()
        .zip(written.type_counts)
        .map(|(n, c)| format!("\"{n}\": {c}"))
        .collect();
    let file_list: Vec<String> = files
        .iter()
        .map(|(k, p)| {
            let base = p.rsplit('/').next().unwrap_or(p);
            format!("\"{k}\": {{\"path\": \"{base}\"}}")
        })
        .collect();
    let meta = format!(
        "{{\n \"params\": {{\"family\": \"kron\", \"generator\": \"gen_kron (streaming)\", \
         \"seed\": {}, \"scale\": {}, \"edge_factor\": {}, \"A\": {A}, \"B\": {B}, \"C\": {C}, \
         \"D\": 0.05, \"dedupe\": \"{}\"}},\n \"id_space\": {},\n \"nodes_with_degree\": {with_degree},\n \
         \"edges\": {},\n \"raw_edges\": {},\n \"max_total_degree\": {max_degree},\n \
         \"type_counts\": {{{}}},\n \"pairs\": {},\n \"files\": {{{}}}\n}}\n",
        a.seed,
        a.scale,
        a.edge_factor,
        if a.dedupe { "exact" } else { "none" },
        1u64 << a.scale,
        written.edges,
        g.raw_edges,
        types.join(", "),
        a.pairs,
        file_list.join(", ")
    );
    let meta_path = format!("{}.meta.json", a.out);
    std::fs::write(&meta_path, meta).map_err(|e| format!("cannot write {meta_path}: {e}"))?;
    eprintln!(
        "gen_kron: {} edges of {} raw, {with_degree} nodes with an edge, {:.1}s",
        written.edges,
        g.raw_edges,
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn output(g: &Gen, keep: Option<&BitSet>, threads: usize) -> (Vec<u8>, Written, Vec<u32>) {
        let mut degree = vec![0u32; 1 << g.scale];
        let mut out = Vec::new();
        let w = write_edges(g, keep, threads, &mut degree, &mut out, false).unwrap();
        (out, w, degree)
    }

    #[test]
    fn the_node_permutation_is_a_bijection() {
        for scale in 1..=14 {
            let g = Gen::new(scale, 16, 7);
            let seen: HashSet<u32> = (0..1u32 << scale).map(|x| g.permute(x)).collect();
            assert_eq!(seen.len(), 1 << scale, "scale {scale}");
            assert!(seen.iter().all(|&v| v < 1 << scale));
        }
    }

    #[test]
    fn duplicates_go_whatever_the_bucket_count_and_threads() {
        let g = Gen::new(10, 16, 3);
        // The reference: a hash set over the raw edges in order, first occurrence kept.
        let mut seen = HashSet::new();
        let mut expected = Vec::new();
        for c in 0..g.chunks() {
            g.chunk(c, |_, s, d, t| {
                if seen.insert((s, d, t)) {
                    expected.extend_from_slice(
                        format!("{s}\t{d}\t{}\n", TYPE_NAMES[t as usize]).as_bytes(),
                    );
                }
            });
        }
        let one = first_occurrences(&g, 1, 1, false);
        let (text, w, _) = output(&g, Some(&one), 1);
        assert_eq!(text, expected);
        assert!(
            w.edges < g.raw_edges,
            "scale 10 at edge factor 16 repeats triples"
        );
        for (buckets, threads) in [(7, 3), (2, 2), (16, 1)] {
            let keep = first_occurrences(&g, buckets, threads, false);
            assert_eq!(keep.0, one.0, "{buckets} buckets, {threads} threads");
            assert_eq!(output(&g, Some(&keep), threads).0, expected);
        }
    }

    /// Calls `f(row, column, type)` for every raw edge, self-loops included.
    fn every_raw_edge(g: &Gen, mut f: impl FnMut(u32, u32, u8)) {
        for c in 0..g.chunks() {
            let mut rng = g.chunk_rng(c);
            for _ in g.raw_range(c) {
                let (i, j, t) = g.draw(&mut rng);
                f(i, j, t);
            }
        }
    }

    #[test]
    fn without_dedupe_only_self_loops_go() {
        let g = Gen::new(8, 4, 5);
        let (_, w, _) = output(&g, None, 2);
        let mut loops = 0;
        every_raw_edge(&g, |i, j, _| loops += u64::from(i == j));
        assert!(loops > 0);
        assert_eq!(w.edges + loops, g.raw_edges);
    }

    #[test]
    fn types_and_quadrants_follow_the_probabilities() {
        // 2^19 raw edges: each frequency within 0.5 percentage points of its probability
        // (the standard error is below 0.05 points; the seed is fixed).
        let g = Gen::new(15, 16, 11);
        let (mut types, mut row1, mut row0, mut col1_row0, mut total) = ([0u64; 4], 0, 0, 0, 0);
        let mask = (1u32 << g.scale) - 1;
        every_raw_edge(&g, |i, j, t| {
            types[t as usize] += 1;
            row1 += u64::from(i.count_ones());
            row0 += u64::from((!i & mask).count_ones());
            col1_row0 += u64::from((!i & j & mask).count_ones());
            total += 1u64;
        });
        let near = |x: f64, p: f64| (x - p).abs() < 0.005;
        for (t, p) in types.iter().zip(TYPE_P) {
            assert!(
                near(*t as f64 / total as f64, p),
                "type share {t}/{total} vs {p}"
            );
        }
        let levels = (total * u64::from(g.scale)) as f64;
        assert!(near(row1 as f64 / levels, 1.0 - A - B));
        assert!(near(col1_row0 as f64 / row0 as f64, B / (A + B)));
    }

    #[test]
    fn pairs_are_distinct_nodes_with_edges() {
        let g = Gen::new(9, 2, 1);
        let (_, _, degree) = output(&g, None, 1);
        for (s, d) in pairs(&degree, 500, 1) {
            assert_ne!(s, d);
            assert!(degree[s as usize] > 0 && degree[d as usize] > 0);
        }
    }

    #[test]
    fn a_limit_too_small_is_an_error_and_more_memory_means_fewer_buckets() {
        let g = Gen::new(20, 16, 1);
        assert!(bucket_count(&g, 1 << 20).is_err());
        let small = bucket_count(&g, 256 << 20).unwrap();
        let large = bucket_count(&g, 4 << 30).unwrap();
        assert!(small > large && large >= 1);
    }

    #[test]
    fn arguments_are_checked() {
        let parse = |s: &str| Args::parse(s.split_whitespace().map(String::from));
        assert!(parse("--scale 12 --out /tmp/x").is_ok());
        assert!(parse("--scale 31 --out /tmp/x").is_err());
        assert!(parse("--scale 12").is_err());
        assert!(parse("--scale 12 --out x --dedupe maybe").is_err());
        assert!(parse("--scale twelve --out x").is_err());
    }
}
