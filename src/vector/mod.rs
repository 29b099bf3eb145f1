//! Vector kernels: cosine similarity, exact top-k scan and HNSW search, pure compute over
//! slices.
//!
//! Nothing here knows about segments, files or node records. Vectors are rows of one flat
//! `f32` slice ([`Vectors`]): either L2-normalised by the caller (see [`normalize`]), so
//! cosine similarity is a dot product, or stored as written with one scale per row (its
//! inverse norm, [`row_scale`]), so cosine similarity is the dot product times the scale
//! and the embedding itself is stored once. Results are [`Scored`] rows, best first: higher similarity,
//! then the lower row index (so answers never depend on scan or heap order).
//!
//! - [`dot`]: the dot product in eight independent lanes (`chunks_exact(8)`), a loop the
//!   compiler auto-vectorises on stable Rust: norms and scales.
//! - [`dot_wide`]: the dot product in 32 lanes (four chains of additions that overlap),
//!   which scores rows: searches, graph builds, exact scans.
//! - [`TopK`]: a bounded min-heap keeping the best `k` rows seen.
//! - [`exact`]: a full scan of a [`Vectors`] with an acceptance predicate.
//! - [`hnsw`]: building a hierarchical navigable small-world graph (Malkov & Yashunin,
//!   2016) and searching it through the narrow [`hnsw::Graph`] trait, which the segment's
//!   CSR adjacency implements.

pub mod hnsw;
mod wide;

pub use wide::dot_wide;

use crate::format::segment::{prefetch_at, prefetch_span};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Rows of `dim` floats stored back to back: unit rows, or rows as written with a scale
/// each (see the module doc).
#[derive(Clone, Copy, Debug)]
pub struct Vectors<'a> {
    data: &'a [f32],
    dim: usize,
    /// Per row, the factor that makes it a unit vector; empty: the rows are unit rows.
    scales: &'a [f32],
}

impl<'a> Vectors<'a> {
    /// Unit rows: `data` holds `data.len() / dim` whole rows (a trailing partial row is
    /// ignored); `dim` 0 holds no rows.
    pub fn new(data: &'a [f32], dim: usize) -> Vectors<'a> {
        let len = data.len().checked_div(dim).unwrap_or(0);
        Vectors {
            data: &data[..len * dim],
            dim,
            scales: &[],
        }
    }

    /// Rows as written, row `i` scaled to unit length by `scales[i]` (see [`row_scale`]).
    /// Only whole rows that have a scale count.
    pub fn scaled(data: &'a [f32], dim: usize, scales: &'a [f32]) -> Vectors<'a> {
        let len = data.len().checked_div(dim).unwrap_or(0).min(scales.len());
        Vectors {
            data: &data[..len * dim],
            dim,
            scales: &scales[..len],
        }
    }

    /// Row `i`'s scale (1 for unit rows; 0 beyond the last row).
    #[inline]
    fn scale(&self, i: usize) -> f32 {
        if self.scales.is_empty() {
            1.0
        } else {
            self.scales.get(i).copied().unwrap_or(0.0)
        }
    }

    /// The cosine similarity of row `i` to the unit vector `query`, or `None` beyond the
    /// last row.
    #[inline]
    pub fn sim(&self, query: &[f32], i: usize) -> Option<f32> {
        let d = dot_wide(self.get(i)?, query);
        Some(if self.scales.is_empty() {
            d
        } else {
            d * self.scale(i)
        })
    }

    /// The cosine similarity of rows `i` and `j`, or `None` beyond the last row.
    #[inline]
    pub fn sim_rows(&self, i: usize, j: usize) -> Option<f32> {
        let d = dot_wide(self.get(i)?, self.get(j)?);
        Some(if self.scales.is_empty() {
            d
        } else {
            d * self.scale(i) * self.scale(j)
        })
    }

    /// Row `i` scaled to unit length (zeros for a zero row) into `out` (cleared first);
    /// `false` beyond the last row.
    pub fn unit_row_into(&self, i: usize, out: &mut Vec<f32>) -> bool {
        out.clear();
        let Some(row) = self.get(i) else {
            return false;
        };
        if self.scales.is_empty() {
            out.extend_from_slice(row);
        } else {
            let s = self.scale(i);
            out.extend(row.iter().map(|x| x * s));
        }
        true
    }

    /// Number of rows.
    #[inline]
    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }

    /// Whether there are no rows.
    #[inline]
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // the pair of `len`; benches use it
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The dimension.
    #[inline]
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Starts loading row `i` (up to its first 64 floats) and its scale into the CPU's
    /// caches: a hint for a row about to be scored; nothing beyond the last row.
    #[inline]
    pub fn prefetch(&self, i: usize) {
        if let Some(start) = i.checked_mul(self.dim) {
            prefetch_span(self.data, start, self.dim.min(64));
        }
        if !self.scales.is_empty() {
            prefetch_at(self.scales, i);
        }
    }

    /// Starts loading all of row `i` (a hint for the next row scored: beyond the first
    /// lines [`Vectors::prefetch`] asked for, a 384-float row is 24 cache lines, which the
    /// CPU's own prefetcher starts on only after the first misses); nothing beyond the last
    /// row.
    #[inline]
    pub fn prefetch_row(&self, i: usize) {
        if let Some(start) = i.checked_mul(self.dim) {
            prefetch_span(self.data, start, self.dim);
        }
    }

    /// Row `i` as stored (not scaled), or `None` beyond the last row.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a [f32]> {
        let start = i.checked_mul(self.dim)?;
        self.data.get(start..start.checked_add(self.dim)?)
    }
}

/// The dot product of `a` and `b` (over the shorter length). Eight partial sums in
/// independent lanes let the compiler emit SIMD multiply-adds without `-ffast-math`.
///
/// On x86-64 CPUs with AVX2 the same eight lanes run as one 256-bit register instead of two
/// 128-bit ones (chosen at run time). Each lane multiplies then adds (never a fused
/// multiply-add) in the same order, and the lanes are summed by the same expression, so
/// both copies give the same bits: the HNSW graph built from these sums, and so the files,
/// do not depend on the CPU (tested).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, the only feature `dot_avx2` is compiled for.
        return unsafe { dot_avx2(a, b) };
    }
    dot_lanes(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::{
        _mm256_add_ps, _mm256_loadu_ps, _mm256_mul_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    };
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let tail = tail_sum(ca.remainder(), cb.remainder());
    // The eight lanes in one register, written out: left to the compiler, this loop came
    // out as pairs of lanes in 128-bit registers.
    let mut acc = _mm256_setzero_ps();
    for (x, y) in ca.zip(cb) {
        // SAFETY: `x` and `y` are chunks of exactly 8 floats; unaligned loads are allowed.
        let (vx, vy) = unsafe { (_mm256_loadu_ps(x.as_ptr()), _mm256_loadu_ps(y.as_ptr())) };
        acc = _mm256_add_ps(acc, _mm256_mul_ps(vx, vy));
    }
    let mut lanes = [0f32; 8];
    // SAFETY: `lanes` holds 8 floats; unaligned stores are allowed.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
    sum_lanes(&lanes, tail)
}

/// The one definition of the sum (see [`dot`]), inlined into each compiled copy.
#[inline(always)]
fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let tail = tail_sum(ca.remainder(), cb.remainder());
    let mut acc = [0f32; 8];
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    sum_lanes(&acc, tail)
}

/// The products of the last `len % 8` floats, summed in order.
#[inline(always)]
fn tail_sum(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The eight lane sums and the tail, added in one fixed order.
#[inline(always)]
fn sum_lanes(acc: &[f32; 8], tail: f32) -> f32 {
    (acc[0] + acc[4]) + (acc[1] + acc[5]) + (acc[2] + acc[6]) + (acc[3] + acc[7]) + tail
}

/// `v` scaled to unit length, or `None` when its norm is zero or not finite (cosine
/// similarity is then undefined).
pub fn normalize(v: &[f32]) -> Option<Vec<f32>> {
    let mut out = Vec::with_capacity(v.len());
    normalize_into(v, &mut out).map(|()| out)
}

/// [`normalize`], appending the unit vector to `out` (which is left as it was on `None`).
pub fn normalize_into(v: &[f32], out: &mut Vec<f32>) -> Option<()> {
    let norm = dot(v, v).sqrt();
    if !(norm.is_finite() && norm > 0.0) {
        return None;
    }
    let start = out.len();
    out.extend(v.iter().map(|x| x / norm));
    if out[start..].iter().all(|x| x.is_finite()) {
        Some(())
    } else {
        out.truncate(start);
        None
    }
}

/// The factor that scales `v` to unit length: `1 / |v|`, or 0 when `v` has no direction
/// (norm zero, not finite, or a scaled component not finite), so its similarity to
/// anything is 0. The one definition: segments store it per row and `verify` recomputes it
/// bit for bit ([`dot`] gives the same bits on every CPU).
pub fn row_scale(v: &[f32]) -> f32 {
    let norm = dot(v, v).sqrt();
    if !(norm.is_finite() && norm > 0.0) {
        return 0.0;
    }
    let s = 1.0 / norm;
    if s.is_finite() && v.iter().all(|x| (x * s).is_finite()) {
        s
    } else {
        0.0
    }
}

/// A row and its similarity to the query. Ordered so that greater is better: higher
/// similarity, then lower row index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scored {
    /// Cosine similarity (a dot product of unit vectors).
    pub sim: f32,
    /// Row index.
    pub index: u32,
}

impl Eq for Scored {}

impl Ord for Scored {
    fn cmp(&self, other: &Scored) -> Ordering {
        self.sim
            .total_cmp(&other.sim)
            .then_with(|| other.index.cmp(&self.index))
    }
}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Scored) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The best `k` [`Scored`] rows offered, in a bounded min-heap: O(log k) per offer that
/// enters, O(1) per one that does not.
#[derive(Clone, Debug)]
pub struct TopK {
    k: usize,
    heap: BinaryHeap<std::cmp::Reverse<Scored>>,
}

impl TopK {
    /// Keeps at most `k` rows.
    pub fn new(k: usize) -> TopK {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(4096) + 1),
        }
    }

    /// Offers a row; returns whether it entered.
    #[inline]
    pub fn offer(&mut self, s: Scored) -> bool {
        if self.k == 0 {
            return false;
        }
        if self.heap.len() < self.k {
            self.heap.push(std::cmp::Reverse(s));
            return true;
        }
        match self.heap.peek() {
            Some(worst) if s > worst.0 => {
                self.heap.pop();
                self.heap.push(std::cmp::Reverse(s));
                true
            }
            _ => false,
        }
    }

    /// The worst row kept, once `k` rows are kept (a row must beat it to enter).
    #[inline]
    pub fn threshold(&self) -> Option<Scored> {
        (self.heap.len() >= self.k)
            .then(|| self.heap.peek().map(|r| r.0))
            .flatten()
    }

    /// The rows kept, best first.
    pub fn into_sorted(self) -> Vec<Scored> {
        // `into_sorted_vec` of `Reverse` is ascending in `Reverse`, i.e. best first.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| r.0)
            .collect()
    }
}

/// Exact search: the best `k` rows of `vectors` for the unit vector `query` among the rows
/// `accept` admits. Rows are scored 32 lanes at a time ([`dot_wide`]), and `accept` is asked
/// only for rows that would enter the top-k, so an expensive predicate (a node filter that
/// reads records) runs on few rows.
///
/// # Complexity
/// O(n · dim) multiply-adds, O(k log k) heap work per entering row.
pub fn exact(
    vectors: Vectors<'_>,
    query: &[f32],
    k: usize,
    mut accept: impl FnMut(u32) -> bool,
) -> Vec<Scored> {
    let mut top = TopK::new(k);
    if k == 0 || query.len() != vectors.dim() {
        return Vec::new();
    }
    let unit = vectors.scales.is_empty();
    for (i, row) in (0u32..).zip(vectors.data.chunks_exact(vectors.dim.max(1))) {
        let d = dot_wide(row, query);
        let s = Scored {
            sim: if unit {
                d
            } else {
                d * vectors.scale(i as usize)
            },
            index: i,
        };
        if top.threshold().is_none_or(|t| s > t) && accept(i) {
            top.offer(s);
        }
    }
    top.into_sorted()
}

/// A deterministic pseudo-random generator (SplitMix64): the HNSW level draw is seeded from
/// the segment id so that identical input gives identical files. Not for cryptography.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// Starts at `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform float in (0, 1].
    pub fn next_unit(&mut self) -> f64 {
        // 53 random bits, shifted away from zero so `ln` stays finite.
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }
}

#[cfg(test)]
pub(crate) mod testdata {
    use super::{SplitMix64, normalize};

    /// `n` unit vectors of `dim` floats in `clusters` Gaussian-ish clusters, seeded.
    pub fn clustered(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<f32> {
        let mut rng = SplitMix64::new(seed);
        // Values in (-1, 1]: f32 holds them to its precision.
        #[allow(clippy::cast_possible_truncation)]
        let mut uniform = move || rng.next_unit() as f32 * 2.0 - 1.0;
        let centers: Vec<Vec<f32>> = (0..clusters)
            .map(|_| (0..dim).map(|_| uniform()).collect())
            .collect();
        let mut out = Vec::with_capacity(n * dim);
        for i in 0..n {
            let c = &centers[i % clusters];
            let v: Vec<f32> = c.iter().map(|x| x + 0.35 * uniform()).collect();
            out.extend(normalize(&v).unwrap_or(v));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(
        vectors: Vectors<'_>,
        q: &[f32],
        k: usize,
        accept: impl Fn(u32) -> bool,
    ) -> Vec<Scored> {
        let mut all: Vec<Scored> = (0..vectors.len())
            .filter(|&i| accept(u32::try_from(i).unwrap()))
            .map(|i| Scored {
                sim: vectors
                    .get(i)
                    .unwrap()
                    .iter()
                    .zip(q)
                    .map(|(a, b)| a * b)
                    .sum(),
                index: u32::try_from(i).unwrap(),
            })
            .collect();
        all.sort_by(|a, b| b.cmp(a));
        all.truncate(k);
        all
    }

    /// The AVX2 copy gives the portable copy's bits (graphs and files must not depend on
    /// the CPU).
    #[test]
    #[allow(clippy::cast_possible_truncation, reason = "test data in f32")]
    fn dot_is_the_same_bits_on_every_cpu() {
        let mut rng = SplitMix64::new(3);
        for n in [0, 1, 7, 8, 9, 15, 50, 128, 384, 1000] {
            let a: Vec<f32> = (0..n).map(|_| rng.next_unit() as f32 * 2.0 - 1.0).collect();
            let b: Vec<f32> = (0..n).map(|_| rng.next_unit() as f32 * 2.0 - 1.0).collect();
            let portable = dot_lanes(&a, &b);
            assert_eq!(dot(&a, &b).to_bits(), portable.to_bits(), "n={n}");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2 (checked).
                let wide = unsafe { dot_avx2(&a, &b) };
                assert_eq!(wide.to_bits(), portable.to_bits(), "avx2 n={n}");
            }
        }
    }

    #[test]
    fn dot_matches_a_plain_sum() {
        for n in [0, 1, 7, 8, 9, 31, 128, 129] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-4, "n={n}");
        }
    }

    #[test]
    fn normalize_rejects_zero_and_scales_to_one() {
        assert!(normalize(&[0.0, 0.0]).is_none());
        let v = normalize(&[3.0, 4.0]).unwrap();
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        // Huge components: the norm overflows f32.
        assert!(normalize(&[f32::MAX, f32::MAX]).is_none());
    }

    #[test]
    fn exact_equals_brute_force() {
        let dim = 19;
        let data = testdata::clustered(1000, dim, 7, 3);
        let v = Vectors::new(&data, dim);
        for (qi, k) in [(0usize, 1usize), (5, 10), (17, 100), (3, 5000)] {
            let q = v.get(qi).unwrap();
            for accept in [|_: u32| true, |i: u32| i.is_multiple_of(3)] {
                let got = exact(v, q, k, accept);
                let want = brute(v, q, k, accept);
                assert_eq!(got.len(), want.len());
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(g.index, w.index);
                    assert!((g.sim - w.sim).abs() < 1e-5);
                }
            }
        }
        // Wrong query dimension or k = 0: nothing.
        assert!(exact(v, &[1.0], 3, |_| true).is_empty());
        assert!(exact(v, v.get(0).unwrap(), 0, |_| true).is_empty());
    }

    /// Rows stored as written with their scales score as their unit rows do (a zero row,
    /// and a row whose norm overflows, get scale 0 and similarity 0).
    #[test]
    fn scaled_rows_score_as_their_unit_rows() {
        let dim = 19;
        let unit = testdata::clustered(500, dim, 5, 9);
        let (mut raw, mut scales) = (Vec::new(), Vec::new());
        for (i, row) in unit.chunks_exact(dim).enumerate() {
            let f = 0.5 + (i % 7) as f32 * 3.0;
            let r: Vec<f32> = row.iter().map(|x| x * f).collect();
            scales.push(row_scale(&r));
            raw.extend(r);
        }
        assert_eq!(row_scale(&[0.0; 3]), 0.0);
        assert_eq!(row_scale(&[f32::MAX, 1.0]), 0.0);
        assert_eq!(row_scale(&[3.0, 4.0]), 0.2);
        raw.extend([0.0; 19]);
        scales.push(0.0);
        let (u, s) = (
            Vectors::new(&unit, dim),
            Vectors::scaled(&raw, dim, &scales),
        );
        assert_eq!(s.len(), 501);
        assert_eq!(Vectors::scaled(&raw, dim, &scales[..10]).len(), 10);
        for qi in [0usize, 17, 333] {
            let q = u.get(qi).unwrap();
            let (a, b) = (exact(u, q, 10, |_| true), exact(s, q, 10, |_| true));
            assert_eq!(
                a.iter().map(|x| x.index).collect::<Vec<_>>(),
                b.iter().map(|x| x.index).collect::<Vec<_>>()
            );
            for (x, y) in a.iter().zip(&b) {
                assert!((x.sim - y.sim).abs() < 1e-5);
            }
            assert!((s.sim(q, 3).unwrap() - u.sim(q, 3).unwrap()).abs() < 1e-5);
        }
        assert!((s.sim_rows(3, 4).unwrap() - u.sim_rows(3, 4).unwrap()).abs() < 1e-5);
        assert_eq!(s.sim(u.get(0).unwrap(), 500), Some(0.0));
        assert_eq!(s.sim(u.get(0).unwrap(), 501), None);
        let mut row = Vec::new();
        assert!(s.unit_row_into(5, &mut row));
        for (x, y) in row.iter().zip(u.get(5).unwrap()) {
            assert!((x - y).abs() < 1e-6);
        }
        assert!(!s.unit_row_into(501, &mut row));
    }

    #[test]
    fn topk_orders_best_first_with_index_ties() {
        let mut t = TopK::new(3);
        for (sim, index) in [(0.5, 4), (0.9, 1), (0.5, 2), (0.1, 0), (0.5, 3)] {
            t.offer(Scored { sim, index });
        }
        let got: Vec<(f32, u32)> = t.into_sorted().iter().map(|s| (s.sim, s.index)).collect();
        assert_eq!(got, vec![(0.9, 1), (0.5, 2), (0.5, 3)]);
    }
}
