//! The scoring dot product: 32 independent partial sums, for long rows.
//!
//! [`super::dot`] keeps eight partial sums in one chain of additions: at 384 dimensions
//! that is 48 dependent vector additions, and the loop waits on the adder's latency (about
//! four cycles each) rather than on the loads. [`dot_wide`] keeps four such chains (32
//! lanes), so the additions overlap and the loop runs at the rate rows can be loaded.
//!
//! It is a different sum from [`super::dot`] (other rounding), so it scores rows only:
//! query to row and row to row in searches, graph builds and exact scans. The row scales
//! ([`super::row_scale`]), which `verify` recomputes bit for bit, stay on [`super::dot`].
//!
//! Bits: every lane multiplies then adds (never a fused multiply-add) in one fixed order
//! and the lanes are summed by one fixed expression, in the AVX2 copy (chosen at run time)
//! and the portable copy alike, so both give the same bits and an HNSW graph built from
//! these sums does not depend on the CPU (tested). A fused multiply-add would save one
//! instruction per eight products but not time: at two loads per eight products the loop
//! is bound by loads, and the portable copy could not give the same bits.

/// Partial sums: four chains of eight lanes.
const LANES: usize = 32;
/// The width of one chain (one 256-bit register).
const CHAIN: usize = 8;

/// The dot product of `a` and `b` (over the shorter length) in 32 lanes: products of
/// whole 32-float blocks go to all 32 lanes, of the remaining whole 8-float blocks to the
/// first 8, the last `len % 8` are summed in order; the lanes are then folded as
/// `(l[i] + l[i+8]) + (l[i+16] + l[i+24])` and those eight summed as [`super::dot`] sums
/// its lanes. The same bits on every CPU.
#[inline]
pub fn dot_wide(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, the only feature `dot_wide_avx2` is compiled for.
        return unsafe { dot_wide_avx2(a, b) };
    }
    dot_wide_lanes(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dot_wide_avx2(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::{
        __m256, _mm256_add_ps, _mm256_loadu_ps, _mm256_mul_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    };
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (wa, wb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (wa.remainder(), wb.remainder());
    let (ca, cb) = (ra.chunks_exact(CHAIN), rb.chunks_exact(CHAIN));
    let tail = super::tail_sum(ca.remainder(), cb.remainder());
    // The products of 8 floats at `x` and `y`.
    let mul = |x: &[f32], y: &[f32]| -> __m256 {
        // SAFETY: callers pass slices of at least 8 floats (whole chunks); unaligned
        // loads are allowed.
        unsafe { _mm256_mul_ps(_mm256_loadu_ps(x.as_ptr()), _mm256_loadu_ps(y.as_ptr())) }
    };
    let mut acc = [_mm256_setzero_ps(); LANES / CHAIN];
    for (x, y) in wa.zip(wb) {
        for (k, s) in acc.iter_mut().enumerate() {
            let at = k * CHAIN;
            *s = _mm256_add_ps(*s, mul(&x[at..at + CHAIN], &y[at..at + CHAIN]));
        }
    }
    for (x, y) in ca.zip(cb) {
        acc[0] = _mm256_add_ps(acc[0], mul(x, y));
    }
    let folded = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let mut lanes = [0f32; CHAIN];
    // SAFETY: `lanes` holds 8 floats; unaligned stores are allowed.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), folded) };
    super::sum_lanes(&lanes, tail)
}

/// The one definition of the sum (see [`dot_wide`]), portable.
#[inline(always)]
fn dot_wide_lanes(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (wa, wb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (wa.remainder(), wb.remainder());
    let (ca, cb) = (ra.chunks_exact(CHAIN), rb.chunks_exact(CHAIN));
    let tail = super::tail_sum(ca.remainder(), cb.remainder());
    let mut acc = [0f32; LANES];
    for (x, y) in wa.zip(wb) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    for (x, y) in ca.zip(cb) {
        for i in 0..CHAIN {
            acc[i] += x[i] * y[i];
        }
    }
    let mut lanes = [0f32; CHAIN];
    for (i, l) in lanes.iter_mut().enumerate() {
        *l = (acc[i] + acc[i + CHAIN]) + (acc[i + 2 * CHAIN] + acc[i + 3 * CHAIN]);
    }
    super::sum_lanes(&lanes, tail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::SplitMix64;

    /// The AVX2 copy gives the portable copy's bits, at lengths around and between the
    /// block sizes (graphs and files must not depend on the CPU).
    #[test]
    #[allow(clippy::cast_possible_truncation, reason = "test data in f32")]
    fn dot_wide_is_the_same_bits_on_every_cpu() {
        let mut rng = SplitMix64::new(17);
        for n in [
            0, 1, 7, 8, 9, 15, 31, 32, 33, 40, 50, 63, 64, 65, 100, 128, 383, 384, 385, 768, 1001,
        ] {
            let a: Vec<f32> = (0..n).map(|_| rng.next_unit() as f32 * 2.0 - 1.0).collect();
            let b: Vec<f32> = (0..n).map(|_| rng.next_unit() as f32 * 2.0 - 1.0).collect();
            let portable = dot_wide_lanes(&a, &b);
            assert_eq!(dot_wide(&a, &b).to_bits(), portable.to_bits(), "n={n}");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2 (checked).
                let simd = unsafe { dot_wide_avx2(&a, &b) };
                assert_eq!(simd.to_bits(), portable.to_bits(), "avx2 n={n}");
            }
        }
    }

    /// Within float tolerance of a plain sum in f64 and of the eight-lane [`super::super::dot`],
    /// over the shorter of two lengths.
    #[test]
    #[allow(clippy::cast_possible_truncation, reason = "test data in f32")]
    fn dot_wide_matches_a_plain_sum() {
        let mut rng = SplitMix64::new(5);
        for n in [0, 1, 9, 33, 50, 129, 384, 777] {
            let a: Vec<f32> = (0..n).map(|_| rng.next_unit() as f32 * 2.0 - 1.0).collect();
            let b: Vec<f32> = (0..n + 3)
                .map(|_| rng.next_unit() as f32 * 2.0 - 1.0)
                .collect();
            let plain: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| f64::from(*x) * f64::from(*y))
                .sum();
            let wide = f64::from(dot_wide(&a, &b));
            assert!((wide - plain).abs() < 1e-4, "n={n}: {wide} vs {plain}");
            let eight = f64::from(crate::vector::dot(&a, &b));
            assert!((wide - eight).abs() < 1e-4, "n={n}: {wide} vs {eight}");
        }
    }
}
