//! One attention head over one text, `softmax(q kᵀ / sqrt(dim)) v`, with its two products
//! run by the dense layers' micro-kernel (`gemm::small_product`): the keys and then the
//! values are packed into 16-wide panels (a few KiB per head), the scores are a product
//! of the query rows with the key panels, the output a product of the probabilities with
//! the value panels. Plain loops over 16-float arrays were left scalar by the compiler
//! here, and attention then cost ~20% of a short text's forward pass.

use crate::gemm::{self, Kernel};
use crate::vmath;

/// Where one attention head's rows are: row `i` of q, k and v starts at `i * stride` of
/// its slice and has `dim` floats; there are `len` rows.
#[derive(Clone, Copy)]
pub(crate) struct HeadShape {
    pub(crate) stride: usize,
    pub(crate) len: usize,
    pub(crate) dim: usize,
}

/// Buffers one thread reuses across heads.
#[derive(Default)]
pub(crate) struct Scratch {
    keys: Vec<f32>,
    values: Vec<f32>,
    scores: Vec<f32>,
}

/// Panels of 16 columns as `gemm` reads them: `packed[(panel * k + i) * 16 + lane]` =
/// `at(i, panel * 16 + lane)` for columns below `n`, zero beyond.
fn pack(packed: &mut Vec<f32>, k: usize, n: usize, at: impl Fn(usize, usize) -> f32) {
    let panels = n.div_ceil(16);
    packed.clear();
    packed.resize(panels * k * 16, 0.0);
    for p in 0..panels {
        for i in 0..k {
            let row = &mut packed[(p * k + i) * 16..(p * k + i + 1) * 16];
            for (lane, w) in row.iter_mut().enumerate() {
                let col = p * 16 + lane;
                if col < n {
                    *w = at(i, col);
                }
            }
        }
    }
}

/// Writes `softmax(q kᵀ / sqrt(dim)) v` into `out` (`len * dim`).
pub(crate) fn head(
    kernel: Kernel,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: HeadShape,
    scratch: &mut Scratch,
    out: &mut [f32],
) {
    let HeadShape { stride, len, dim } = shape;
    if len == 0 || dim == 0 {
        return;
    }
    #[allow(
        clippy::cast_precision_loss,
        reason = "a head has at most a few hundred dims"
    )]
    let scale = 1.0 / (dim as f32).sqrt();
    // Scores: row i's `padded` columns, key j in column j (zero beyond `len`).
    let padded = len.next_multiple_of(16);
    pack(&mut scratch.keys, dim, len, |d, j| k[j * stride + d]);
    scratch.scores.clear();
    scratch.scores.resize(len * padded, 0.0);
    gemm::small_product(
        kernel,
        q,
        stride,
        len,
        &scratch.keys,
        dim,
        padded,
        &mut scratch.scores,
        padded,
    );
    let mut inverse = Vec::with_capacity(len);
    for row in scratch.scores.chunks_exact_mut(padded) {
        inverse.push(vmath::softmax_numerators(row, len, scale));
    }
    pack(&mut scratch.values, len, dim, |j, d| v[j * stride + d]);
    gemm::small_product(
        kernel,
        &scratch.scores,
        padded,
        len,
        &scratch.values,
        len,
        dim,
        out,
        dim,
    );
    for (row, inv) in out.chunks_exact_mut(dim).zip(inverse) {
        for x in row {
            *x *= inv;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both kernels against the definition in f64, for lengths around the 16-key panels
    /// and the 6-row micro-kernel, and dims that are not multiples of 16.
    #[test]
    fn head_matches_definition() {
        let mut kernels = vec![Kernel::Portable];
        if Kernel::native() != Kernel::Portable {
            kernels.push(Kernel::native());
        }
        for kernel in kernels {
            for (len, dim, stride) in [(5, 3, 7), (1, 8, 8), (17, 32, 100), (40, 20, 61)] {
                let q: Vec<f32> = (0..len * stride)
                    .map(|i| (i % 11) as f32 * 0.3 - 1.5)
                    .collect();
                let k: Vec<f32> = (0..len * stride)
                    .map(|i| (i % 7) as f32 * 0.2 - 0.6)
                    .collect();
                let v: Vec<f32> = (0..len * stride).map(|i| (i % 5) as f32 - 2.0).collect();
                let mut out = vec![f32::NAN; len * dim];
                let shape = HeadShape { stride, len, dim };
                head(kernel, &q, &k, &v, shape, &mut Scratch::default(), &mut out);
                for i in 0..len {
                    let s: Vec<f64> = (0..len)
                        .map(|j| {
                            (0..dim)
                                .map(|d| {
                                    f64::from(q[i * stride + d]) * f64::from(k[j * stride + d])
                                })
                                .sum::<f64>()
                                / (dim as f64).sqrt()
                        })
                        .collect();
                    let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let e: Vec<f64> = s.iter().map(|x| (x - max).exp()).collect();
                    let total: f64 = e.iter().sum();
                    for d in 0..dim {
                        let want: f64 = (0..len)
                            .map(|j| e[j] / total * f64::from(v[j * stride + d]))
                            .sum();
                        let got = f64::from(out[i * dim + d]);
                        assert!(
                            (got - want).abs() < 1e-5,
                            "{kernel:?} len {len} dim {dim} row {i} dim {d}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
}
