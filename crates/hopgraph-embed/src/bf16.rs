//! The encoder's dense layers in bfloat16: weights packed once at load, activations
//! rounded to bf16 per product, products summed in f32.
//!
//! Why: a sentence model's time is its dense products (all-MiniLM-L6-v2: ~10.6 M
//! multiply-adds per token), and an f32 matmul already runs near the CPU's f32 peak. CPUs
//! with AVX-512 BF16 (AMD Zen 4 and later, Intel Cooper Lake / Sapphire Rapids and later)
//! multiply pairs of bf16 numbers and add them into f32 lanes in one instruction
//! (`VDPBF16PS`): twice the multiply-adds of an f32 FMA per instruction. bf16 keeps f32's
//! exponent and 8 bits of mantissa, so the vectors move by a cosine of ~1e-5 (the
//! reference test holds every sentence to >= 0.999 against sentence-transformers' f32).
//!
//! Layout: a `PackedLinear` of `n` outputs and `k` inputs (PyTorch's `[n, k]` weight)
//! stores its weight in panels of 16 output columns; inside a panel, for every pair of
//! inputs `(2j, 2j + 1)`, 16 `u32`s each holding column `c`'s two bf16 weights (low half
//! input `2j`). One `VDPBF16PS` of a broadcast pair of activations against 16 such words
//! advances 16 output columns by two inputs. A ragged `k` is padded with a zero weight;
//! a ragged `n` with zero columns, never stored.
//!
//! [`Kernel::Emulated`] computes the same rounding with scalar code on any CPU: the tests
//! use it to check the AVX-512 kernel and the forward pass everywhere.

use rayon::prelude::*;

use crate::bert::Dense;
use crate::spec::HiddenAct;
use crate::vmath;

/// Output columns per panel: one 512-bit register of f32.
const PANEL: usize = 16;
/// Rows of activations per AVX-512 block: 8 rows x 2 panels = 16 accumulator registers.
#[cfg(target_arch = "x86_64")]
const ROWS_BLOCK: usize = 8;
/// Fewer rows than this per task are not worth a thread.
const ROWS_PER_TASK_MIN: usize = 16;

/// How the dense products are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// AVX-512 BF16 (`VDPBF16PS`); only constructed after the CPU was checked for it.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// The same arithmetic in scalar code (tests, and CPUs without AVX-512 BF16 when asked
    /// for explicitly): slow.
    Emulated,
}

impl Kernel {
    /// The AVX-512 BF16 kernel if this CPU has it.
    pub(crate) fn native() -> Option<Kernel> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bf16")
            {
                return Some(Kernel::Avx512);
            }
        }
        None
    }

    /// The name [`crate::Embedder::kernel`] reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => "bf16-avx512",
            Kernel::Emulated => "bf16-emulated",
        }
    }
}

/// A bf16 dense layer and the kernel it runs on: the encoder's [`Dense`] in bf16.
pub(crate) struct Bf16Dense {
    kernel: Kernel,
    layer: PackedLinear,
}

impl Dense for Bf16Dense {
    type Kernel = Kernel;

    fn pack(weight: &[f32], bias: &[f32], n: usize, k: usize, kernel: Kernel) -> Bf16Dense {
        Bf16Dense {
            kernel,
            layer: PackedLinear::new(weight, bias, n, k),
        }
    }

    fn forward(&self, x: &[f32], rows: usize, y: &mut Vec<f32>, act: Option<HiddenAct>) {
        self.layer.forward(self.kernel, x, rows, y);
        if let Some(act) = act {
            vmath::activate(act, y);
        }
    }
}

/// `x` rounded to the nearest bfloat16 (ties to even), as its 16 bits. NaN stays NaN.
pub(crate) fn to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        // Keep sign and a quiet-NaN bit: truncation alone could give an infinity.
        return halves(bits | 0x0040_0000).1;
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    halves(bits.wrapping_add(round)).1
}

/// A word's low and high 16 bits.
#[allow(
    clippy::cast_possible_truncation,
    reason = "the truncation is the point"
)]
fn halves(w: u32) -> (u16, u16) {
    (w as u16, (w >> 16) as u16)
}

/// Two values as one word of the packed layout: `lo`'s bf16 in the low half, `hi`'s in
/// the high half (the order `VDPBF16PS` pairs them in).
fn bf16_pair(lo: f32, hi: f32) -> u32 {
    u32::from(to_bf16(lo)) | (u32::from(to_bf16(hi)) << 16)
}

/// The f32 a bfloat16 stands for (exact).
pub(crate) fn from_bf16(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// A dense layer `y = x · Wᵀ + b` with its weight packed as bf16 pairs.
pub(crate) struct PackedLinear {
    n: usize,
    k: usize,
    /// Input pairs: `ceil(k / 2)`.
    pairs: usize,
    /// `panels * pairs * PANEL` words (see the module docs).
    weight: Vec<u32>,
    bias: Vec<f32>,
}

impl PackedLinear {
    /// Packs a row-major `[n, k]` weight and its `n` biases.
    pub(crate) fn new(weight: &[f32], bias: &[f32], n: usize, k: usize) -> PackedLinear {
        assert_eq!(weight.len(), n * k, "weight is [n, k]");
        assert_eq!(bias.len(), n, "one bias per output");
        let pairs = k.div_ceil(2);
        let panels = n.div_ceil(PANEL);
        let mut packed = vec![0u32; panels * pairs * PANEL];
        // A ragged `k` or `n` reads as zero weights.
        let w = |col: usize, input: usize| -> f32 {
            if col < n && input < k {
                weight[col * k + input]
            } else {
                0.0
            }
        };
        for panel in 0..panels {
            for pair in 0..pairs {
                let at = (panel * pairs + pair) * PANEL;
                for lane in 0..PANEL {
                    let col = panel * PANEL + lane;
                    packed[at + lane] = bf16_pair(w(col, 2 * pair), w(col, 2 * pair + 1));
                }
            }
        }
        PackedLinear {
            n,
            k,
            pairs,
            weight: packed,
            bias: bias.to_vec(),
        }
    }

    /// Computes `y = x · Wᵀ + b` for `rows` rows: `x` is `rows * k` floats, `y` gets
    /// `rows * n`. Rows are split across the rayon pool's threads.
    pub(crate) fn forward(&self, kernel: Kernel, x: &[f32], rows: usize, y: &mut Vec<f32>) {
        assert_eq!(x.len(), rows * self.k, "x is [rows, k]");
        y.clear();
        y.resize(rows * self.n, 0.0);
        if rows == 0 {
            return;
        }
        // Activations as bf16 pairs, one row of `pairs` words per row of x.
        let mut packed = vec![0u32; rows * self.pairs];
        for (row, out) in x
            .chunks_exact(self.k)
            .zip(packed.chunks_exact_mut(self.pairs))
        {
            pack_row(row, out);
        }
        let threads = rayon::current_num_threads().max(1);
        let per_task = rows.div_ceil(threads).max(ROWS_PER_TASK_MIN);
        if per_task >= rows {
            self.rows(kernel, &packed, y);
            return;
        }
        y.par_chunks_mut(per_task * self.n)
            .zip(packed.par_chunks(per_task * self.pairs))
            .for_each(|(y, x)| self.rows(kernel, x, y));
    }

    /// One task's rows: `x` as bf16 pairs, `y` their outputs.
    fn rows(&self, kernel: Kernel, x: &[u32], y: &mut [f32]) {
        match kernel {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Kernel::Avx512` is only made by `Kernel::native` after checking that
            // the CPU has AVX-512F and AVX-512 BF16.
            Kernel::Avx512 => unsafe { avx512::rows(self, x, y) },
            Kernel::Emulated => self.rows_emulated(x, y),
        }
    }

    fn rows_emulated(&self, x: &[u32], y: &mut [f32]) {
        for (xr, yr) in x.chunks_exact(self.pairs).zip(y.chunks_exact_mut(self.n)) {
            for (col, out) in yr.iter_mut().enumerate() {
                let (panel, lane) = (col / PANEL, col % PANEL);
                let mut acc = self.bias[col];
                for (pair, &xw) in xr.iter().enumerate() {
                    let ww = self.weight[(panel * self.pairs + pair) * PANEL + lane];
                    let (x0, x1) = halves(xw);
                    let (w0, w1) = halves(ww);
                    let lo = from_bf16(x0) * from_bf16(w0);
                    let hi = from_bf16(x1) * from_bf16(w1);
                    acc += lo + hi;
                }
                *out = acc;
            }
        }
    }
}

/// One row of f32 activations as bf16 pairs (a zero pads an odd length).
fn pack_row(row: &[f32], out: &mut [u32]) {
    let mut pairs = row.chunks_exact(2);
    for (o, p) in out.iter_mut().zip(&mut pairs) {
        *o = bf16_pair(p[0], p[1]);
    }
    if let ([last], Some(o)) = (pairs.remainder(), out.last_mut()) {
        *o = bf16_pair(*last, 0.0);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::{
        __m512bh, __m512i, _mm512_dpbf16_ps, _mm512_loadu_si512, _mm512_mask_loadu_ps,
        _mm512_mask_storeu_ps, _mm512_set1_epi32, _mm512_setzero_ps, _mm512_setzero_si512,
    };

    use super::{PANEL, PackedLinear, ROWS_BLOCK};

    /// All of one task's rows: for every pair of panels (32 output columns), every block
    /// of up to 8 rows. The panels' weights (at most 2 * 16 * pairs * 4 bytes, 96 KiB for
    /// 1,536 inputs) stay in L2 while the row blocks pass over them.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX-512F and AVX-512 BF16. `x` holds whole rows of `p.pairs`
    /// words and `y` the same number of rows of `p.n` floats.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn rows(p: &PackedLinear, x: &[u32], y: &mut [f32]) {
        let rows = x.len() / p.pairs;
        assert_eq!(y.len(), rows * p.n, "y holds the rows of x");
        let panels = p.n.div_ceil(PANEL);
        let mut panel = 0;
        while panel < panels {
            let two = panel + 1 < panels;
            let mut row = 0;
            while row < rows {
                let r = (rows - row).min(ROWS_BLOCK);
                // SAFETY: the caller's CPU has the features; `block`'s bounds hold: rows
                // `row..row + r` exist in `x` and `y`, panels `panel..panel + 1 or 2` exist.
                unsafe {
                    match (r, two) {
                        (8, true) => block::<8, 2>(p, x, y, row, panel),
                        (8, false) => block::<8, 1>(p, x, y, row, panel),
                        (4..=7, true) => block::<4, 2>(p, x, y, row, panel),
                        (4..=7, false) => block::<4, 1>(p, x, y, row, panel),
                        (_, true) => block::<1, 2>(p, x, y, row, panel),
                        (_, false) => block::<1, 1>(p, x, y, row, panel),
                    }
                }
                row += match r {
                    8 => 8,
                    4..=7 => 4,
                    _ => 1,
                };
            }
            panel += if two { 2 } else { 1 };
        }
    }

    /// `R` rows x `P` panels of outputs, accumulated over every input pair.
    ///
    /// # Safety
    ///
    /// AVX-512F and AVX-512 BF16; `row + R <= rows of x`, `panel + P <= panels`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    #[allow(clippy::needless_range_loop, reason = "fixed-size register blocks")]
    unsafe fn block<const R: usize, const P: usize>(
        p: &PackedLinear,
        x: &[u32],
        y: &mut [f32],
        row: usize,
        panel: usize,
    ) {
        let pairs = p.pairs;
        assert!((row + R) * pairs <= x.len() && (row + R) * p.n <= y.len());
        assert!((panel + P) * pairs * PANEL <= p.weight.len());
        // Valid lanes of each panel: a ragged last panel has fewer than 16 columns.
        let mut masks = [0u16; P];
        for q in 0..P {
            let valid = p.n.saturating_sub((panel + q) * PANEL).min(PANEL);
            masks[q] = if valid == PANEL {
                u16::MAX
            } else {
                (1u16 << valid) - 1
            };
        }
        let mut acc = [[_mm512_setzero_ps(); P]; R];
        for q in 0..P {
            let bias = p.bias.as_ptr().wrapping_add((panel + q) * PANEL);
            // SAFETY: the mask covers only columns < n, which `bias` has.
            let b = unsafe { _mm512_mask_loadu_ps(acc[0][q], masks[q], bias) };
            for r in 0..R {
                acc[r][q] = b;
            }
        }
        // SAFETY: same size, every bit pattern is a valid __m512bh.
        let bh_zero = unsafe { std::mem::transmute::<__m512i, __m512bh>(_mm512_setzero_si512()) };
        let w = p.weight.as_ptr();
        let xr = x.as_ptr().wrapping_add(row * pairs);
        for pair in 0..pairs {
            let mut wv = [bh_zero; P];
            for q in 0..P {
                // SAFETY: `(panel + q) * pairs * 16 + pair * 16 + 16 <= weight.len()` by the
                // assertion above; 64 unaligned bytes are read. The transmute reinterprets
                // 16 u32 as 32 bf16, the layout `PackedLinear::new` wrote.
                wv[q] = unsafe {
                    std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(
                        w.add(((panel + q) * pairs + pair) * PANEL).cast(),
                    ))
                };
            }
            for r in 0..R {
                // SAFETY: row + r < rows and pair < pairs: inside `x` (asserted above).
                let xv = unsafe { *xr.add(r * pairs + pair) };
                // The pair's two bf16 in every lane; `as i32` keeps the bits.
                let a: __m512bh = {
                    let v = _mm512_set1_epi32(xv as i32);
                    // SAFETY: same size, every bit pattern valid.
                    unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
                };
                for q in 0..P {
                    acc[r][q] = _mm512_dpbf16_ps(acc[r][q], a, wv[q]);
                }
            }
        }
        let out = y.as_mut_ptr();
        for r in 0..R {
            for q in 0..P {
                let at = (row + r) * p.n + (panel + q) * PANEL;
                // SAFETY: the mask covers columns < n of row `row + r`, inside `y`.
                unsafe { _mm512_mask_storeu_ps(out.add(at), masks[q], acc[r][q]) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(to_bf16(1.0), 0x3f80);
        assert_eq!(from_bf16(to_bf16(1.0)), 1.0);
        assert_eq!(to_bf16(-2.5), 0xc020);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even (1.0).
        assert_eq!(to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up to the even.
        assert_eq!(to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(to_bf16(1.0 + 1.5 / 256.0), 0x3f81);
        assert_eq!(to_bf16(f32::INFINITY), 0x7f80);
        assert_eq!(to_bf16(f32::NEG_INFINITY), 0xff80);
        assert!(from_bf16(to_bf16(f32::NAN)).is_nan());
        assert_eq!(from_bf16(to_bf16(f32::MAX)), f32::INFINITY);
        let x = 0.123_456_79_f32;
        assert!((from_bf16(to_bf16(x)) - x).abs() <= x * (1.0 / 256.0));
    }

    fn reference(w: &[f32], b: &[f32], x: &[f32], n: usize, k: usize) -> Vec<f32> {
        let rows = x.len() / k;
        let mut y = vec![0.0f32; rows * n];
        for r in 0..rows {
            for c in 0..n {
                let mut acc = f64::from(b[c]);
                for i in 0..k {
                    acc += f64::from(x[r * k + i]) * f64::from(w[c * k + i]);
                }
                #[allow(clippy::cast_possible_truncation, reason = "f64 reference to f32")]
                let acc = acc as f32;
                y[r * n + c] = acc;
            }
        }
        y
    }

    fn random(len: usize, seed: &mut u64) -> Vec<f32> {
        (0..len).map(|_| lcg(seed)).collect()
    }

    /// Every kernel this CPU has, and the emulation, against an f64 product of the same
    /// numbers, over ragged shapes (odd inputs, partial panels, every row-block tail).
    #[test]
    fn kernels_agree_with_a_plain_product() {
        let mut seed = 7;
        let mut kernels = vec![Kernel::Emulated];
        kernels.extend(Kernel::native());
        if kernels.len() == 1 {
            println!("this CPU has no AVX-512 BF16: only the emulation is checked");
        }
        for &(n, k) in &[(16, 32), (40, 7), (33, 64), (64, 384), (3, 1), (48, 100)] {
            let w = random(n * k, &mut seed);
            let b = random(n, &mut seed);
            let layer = PackedLinear::new(&w, &b, n, k);
            for rows in [0, 1, 3, 4, 7, 8, 9, 13, 16, 17, 40, 71] {
                let x = random(rows * k, &mut seed);
                let want = reference(&w, &b, &x, n, k);
                let mut outs = Vec::new();
                for &kernel in &kernels {
                    let mut y = vec![f32::NAN; 3];
                    layer.forward(kernel, &x, rows, &mut y);
                    assert_eq!(y.len(), rows * n);
                    // bf16 inputs: each product is off by ~2^-8 relative; random signs.
                    let tol = 0.02 * (k as f32).sqrt();
                    for (i, (g, w)) in y.iter().zip(&want).enumerate() {
                        assert!(
                            (g - w).abs() <= tol,
                            "{kernel:?} n {n} k {k} rows {rows} at {i}: {g} vs {w}"
                        );
                    }
                    outs.push(y);
                }
                // The AVX-512 kernel sums the same bf16 products as the emulation.
                for o in &outs[1..] {
                    for (a, b) in o.iter().zip(&outs[0]) {
                        assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "{a} vs {b}");
                    }
                }
            }
        }
    }

    /// A row's result does not depend on which other rows share its call (so a text's
    /// vector is the same alone or in a batch).
    #[test]
    fn rows_are_independent() {
        let (n, k) = (48, 64);
        let mut seed = 11;
        let w = random(n * k, &mut seed);
        let b = random(n, &mut seed);
        let layer = PackedLinear::new(&w, &b, n, k);
        let x = random(37 * k, &mut seed);
        for kernel in std::iter::once(Kernel::Emulated).chain(Kernel::native()) {
            let mut all = Vec::new();
            layer.forward(kernel, &x, 37, &mut all);
            for r in [0, 5, 8, 36] {
                let mut one = Vec::new();
                layer.forward(kernel, &x[r * k..(r + 1) * k], 1, &mut one);
                assert_eq!(one[..], all[r * n..(r + 1) * n], "{kernel:?} row {r}");
            }
        }
    }
}
