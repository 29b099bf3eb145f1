//! Workloads shared by the benches: ports of `shared/workloads/gen_graph.py`'s `kron` and
//! `memory` families driven by a seeded splitmix64 (same shapes, not the same bytes as the
//! numpy output), and a reader for the generator's own TSV output.

#![allow(dead_code, reason = "each bench uses a subset")]
#![allow(
    clippy::cast_possible_truncation,
    clippy::expect_used,
    reason = "bench workloads: sizes far below the limits, setup aborts on bad input"
)]

/// Edge type names, in the generator's order (type index = position).
pub const TYPE_NAMES: [&str; 4] = ["caused_by", "contradicts", "supersedes", "related_to"];
/// Type probabilities of both families.
pub const TYPE_P: [f64; 4] = [0.15, 0.05, 0.10, 0.70];
/// Graph500 edge factor.
pub const EDGE_FACTOR: u64 = 16;

/// splitmix64 (Steele, Lea, Flood 2014): small, seeded, good enough for workloads.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Uniform in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// (source, target, type) triples of the Kronecker graph, deduplicated in generator order.
pub fn kronecker(scale: u32, rng: &mut SplitMix64) -> (u32, Vec<(u32, u32, u16)>) {
    let n = 1u64 << scale;
    let m = EDGE_FACTOR * n;
    let (a, b, c) = (0.57, 0.19, 0.19);
    let ab = a + b;
    let c_norm = c / (1.0 - ab);
    let a_norm = a / ab;
    let mut edges: Vec<(u64, u64)> = (0..m)
        .map(|_| {
            let (mut i, mut j) = (0u64, 0u64);
            for bit in 0..scale {
                let ii = rng.next_f64() > ab;
                let jj = rng.next_f64() > if ii { c_norm } else { a_norm };
                i |= u64::from(ii) << bit;
                j |= u64::from(jj) << bit;
            }
            (i, j)
        })
        .collect();
    let mut perm: Vec<u64> = (0..n).collect();
    shuffle(&mut perm, rng);
    for e in &mut edges {
        *e = (perm[e.0 as usize], perm[e.1 as usize]);
    }
    shuffle(&mut edges, rng);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(edges.len());
    for (s, t) in edges {
        let ty = pick_type(rng);
        if s != t && seen.insert((s, t, ty)) {
            out.push((s as u32, t as u32, ty));
        }
    }
    (n as u32, out)
}

pub fn shuffle<T>(v: &mut [T], rng: &mut SplitMix64) {
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

/// An environment variable as a number.
pub fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The agent-memory family of `gen_graph.py` (see the module docs), types as for kron.
pub fn memory_graph(n: u64, rng: &mut SplitMix64) -> (u32, Vec<(u32, u32, u16)>) {
    let mut edges: Vec<(u64, u64)> = Vec::new();
    let mut ends: Vec<u64> = Vec::new();
    for i in 1..n {
        // Knuth's Poisson sampler, lambda = avg_degree - 1 = 3.
        let (limit, mut k, mut p) = ((-3.0f64).exp(), 0u64, 1.0f64);
        loop {
            p *= rng.next_f64();
            if p <= limit {
                break;
            }
            k += 1;
        }
        for _ in 0..(1 + k).min(i) {
            let r = rng.next_f64();
            let t = if r < 0.6 {
                let back = ((1.0 - rng.next_f64()).ln() / (1.0 - 1.0 / 32.0f64).ln()) as u64;
                i - 1 - back.min(i - 1)
            } else if r < 0.9 && !ends.is_empty() {
                ends[rng.below(ends.len() as u64) as usize]
            } else {
                rng.below(i)
            };
            edges.push((i, t));
            ends.push(i);
            ends.push(t);
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(edges.len());
    for (s, t) in edges {
        let ty = pick_type(rng);
        if s != t && seen.insert((s, t, ty)) {
            out.push((s as u32, t as u32, ty));
        }
    }
    (n as u32, out)
}

/// A `gen_graph.py kron` edge list: `source<TAB>target<TAB>type` with integer ids.
pub fn read_tsv(path: &str) -> (u32, Vec<(u32, u32, u16)>) {
    let text = std::fs::read_to_string(path).expect("readable TSV");
    let mut edges = Vec::new();
    let mut n = 0u32;
    for line in text.lines() {
        let mut f = line.split('\t');
        let (Some(s), Some(t), Some(ty)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let (s, t): (u32, u32) = (
            s.parse().expect("integer id"),
            t.parse().expect("integer id"),
        );
        let ty = TYPE_NAMES
            .iter()
            .position(|x| *x == ty)
            .expect("known type") as u16;
        n = n.max(s + 1).max(t + 1);
        edges.push((s, t, ty));
    }
    (n, edges)
}

/// A type index drawn with the probabilities of `TYPE_P`.
pub fn pick_type(rng: &mut SplitMix64) -> u16 {
    let u = rng.next_f64();
    let mut acc = 0.0;
    for (k, p) in TYPE_P.iter().enumerate() {
        acc += p;
        if u < acc {
            return k as u16;
        }
    }
    3
}
