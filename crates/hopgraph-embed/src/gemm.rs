//! The encoder's dense layers in f32: `y = act(x · Wᵀ + b)` with the weight packed once at
//! load, a register-blocked micro-kernel (AVX2 + FMA where the CPU has it, portable code
//! the compiler vectorises elsewhere, NEON on aarch64), cache blocking, and the output
//! tiles spread over the rayon pool.
//!
//! Layout: a [`Linear`] of `n` outputs and `k` inputs (PyTorch's `[n, k]` weight) stores
//! its weight in panels of 16 output columns; inside a panel, input `i`'s 16 weights are
//! contiguous (`weight[(panel * k + i) * 16 + lane]`). A ragged last panel is padded with
//! zero columns, which are computed and never stored.
//!
//! Blocking: the output is cut into tiles of up to [`TILE_ROWS`] rows by [`TILE_PANELS`]
//! panels, one rayon task each, ordered column tile by column tile, so with few rows (one
//! short text) each thread reads only its share of the weights. Inside a tile the inputs
//! are walked in blocks of [`K_BLOCK`]: a panel's block (16 KiB) stays in L1 while every
//! group of [`MICRO_ROWS`] rows passes over it, and the tile's rows of `x` (96 KiB) stay in
//! L2. The micro-kernel keeps 6 rows x 16 columns of sums in twelve 256-bit registers and
//! reads `x` in place (a broadcast per row and input; no packing of activations).
//!
//! Every output element is computed by the same sequence of operations whatever the
//! number of rows, the tile it falls in or the thread that runs it (bias, then the inputs
//! in order, a block at a time), so a text's vector does not depend on its batch.

use rayon::prelude::*;

use crate::bert::Dense;
use crate::spec::HiddenAct;
use crate::vmath;

/// Output columns per panel: two 256-bit registers of f32.
const PANEL: usize = 16;
/// Rows per micro-kernel call: 6 rows x 2 registers = 12 accumulators of AVX2's 16.
const MICRO_ROWS: usize = 6;
/// Inputs per block: a panel's block is `16 * 256 * 4` = 16 KiB.
const K_BLOCK: usize = 256;
/// Rows per tile (a multiple of [`MICRO_ROWS`]): `96 * 256 * 4` = 96 KiB of `x` per block.
const TILE_ROWS: usize = 96;
/// Panels per tile: 64 output columns.
const TILE_PANELS: usize = 4;
/// Below this many multiply-adds a product runs on the calling thread.
const PARALLEL_MACS_MIN: usize = 1 << 18;

/// How the micro-kernel is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// AVX2 + FMA intrinsics; only constructed after the CPU was checked for both.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// Plain Rust over 16-float lanes, which the compiler vectorises for the target (SSE2
    /// on baseline x86-64, NEON on aarch64).
    Portable,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    pub(crate) fn native() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Kernel::Avx2;
            }
        }
        Kernel::Portable
    }

    /// The name [`crate::Embedder::kernel`] reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => "f32-avx2",
            Kernel::Portable => {
                if cfg!(target_arch = "aarch64") {
                    "f32-neon"
                } else {
                    "f32-portable"
                }
            }
        }
    }
}

/// A dense layer `y = x · Wᵀ + b` with its weight packed in panels.
pub(crate) struct Linear {
    kernel: Kernel,
    n: usize,
    k: usize,
    /// `panels * k * PANEL` floats (see the module docs).
    weight: Vec<f32>,
    /// `panels * PANEL` floats: the biases, zero-padded.
    bias: Vec<f32>,
}

impl Dense for Linear {
    type Kernel = Kernel;

    fn pack(weight: &[f32], bias: &[f32], n: usize, k: usize, kernel: Kernel) -> Linear {
        Linear::new(weight, bias, n, k, kernel)
    }

    fn forward(&self, x: &[f32], rows: usize, y: &mut Vec<f32>, act: Option<HiddenAct>) {
        Linear::forward(self, x, rows, y, act);
    }
}

/// The output matrix shared by the tasks of one product. Each task writes only its own
/// tile (disjoint rows x columns), which is what makes sharing the pointer sound.
struct Output {
    ptr: *mut f32,
    /// Row length (`n`).
    stride: usize,
}

// SAFETY: `Output` is only used by `Linear::forward`, whose tasks write disjoint tiles of
// a buffer that outlives them (the rayon scope ends before `forward` returns).
unsafe impl Send for Output {}
// SAFETY: as above; no task reads or writes another task's tile.
unsafe impl Sync for Output {}

/// One tile of the output: rows `row..row + rows`, panels `panel..panel + panels`.
#[derive(Clone, Copy)]
struct Tile {
    row: usize,
    rows: usize,
    panel: usize,
    panels: usize,
}

impl Linear {
    /// Packs a row-major `[n, k]` weight and its `n` biases for `kernel`.
    ///
    /// # Panics
    ///
    /// If the lengths are not `n * k` and `n` (the loader checks the shapes first).
    pub(crate) fn new(weight: &[f32], bias: &[f32], n: usize, k: usize, kernel: Kernel) -> Linear {
        assert_eq!(weight.len(), n * k, "weight is [n, k]");
        assert_eq!(bias.len(), n, "one bias per output");
        let panels = n.div_ceil(PANEL);
        let mut packed = vec![0f32; panels * k * PANEL];
        for (col, w) in weight.chunks_exact(k.max(1)).enumerate().take(n) {
            let (panel, lane) = (col / PANEL, col % PANEL);
            for (input, &x) in w.iter().enumerate() {
                packed[(panel * k + input) * PANEL + lane] = x;
            }
        }
        let mut padded = bias.to_vec();
        padded.resize(panels * PANEL, 0.0);
        Linear {
            kernel,
            n,
            k,
            weight: packed,
            bias: padded,
        }
    }

    /// Computes `y = act(x · Wᵀ + b)` for `rows` rows: `x` is `rows * k` floats, `y` gets
    /// `rows * n`.
    ///
    /// # Panics
    ///
    /// If `x` is not `rows * k` floats (a bug in the caller, never input-dependent).
    pub(crate) fn forward(&self, x: &[f32], rows: usize, y: &mut Vec<f32>, act: Option<HiddenAct>) {
        assert_eq!(x.len(), rows * self.k, "x is [rows, k]");
        // Every output is written below (bias first), so stale values never survive.
        crate::bert::resize(y, rows * self.n);
        if rows == 0 || self.n == 0 {
            return;
        }
        let panels = self.n.div_ceil(PANEL);
        let row_tiles = rows.div_ceil(TILE_ROWS);
        let panel_tiles = panels.div_ceil(TILE_PANELS);
        let tile_at = |index: usize| {
            // Column tile major: consecutive tasks share weights.
            let (pt, rt) = (index / row_tiles, index % row_tiles);
            let row = rt * TILE_ROWS;
            let panel = pt * TILE_PANELS;
            Tile {
                row,
                rows: (rows - row).min(TILE_ROWS),
                panel,
                panels: (panels - panel).min(TILE_PANELS),
            }
        };
        let out = Output {
            ptr: y.as_mut_ptr(),
            stride: self.n,
        };
        let tiles = row_tiles * panel_tiles;
        if tiles == 1 || rows * self.n * self.k < PARALLEL_MACS_MIN {
            for t in 0..tiles {
                self.tile(x, &out, tile_at(t), act);
            }
        } else {
            (0..tiles)
                .into_par_iter()
                .for_each(|t| self.tile(x, &out, tile_at(t), act));
        }
    }

    /// One tile: every input block, every panel, every group of rows; then the
    /// activation on the tile's outputs.
    fn tile(&self, x: &[f32], out: &Output, t: Tile, act: Option<HiddenAct>) {
        let k = self.k;
        let col_end = ((t.panel + t.panels) * PANEL).min(self.n);
        assert!((t.row + t.rows) * k <= x.len(), "tile inside x");
        let mut k0 = 0;
        loop {
            let kc = (k - k0).min(K_BLOCK);
            for p in t.panel..t.panel + t.panels {
                let cols = (self.n - p * PANEL).min(PANEL);
                let b = &self.weight[(p * k + k0) * PANEL..(p * k + k0 + kc) * PANEL];
                let bias = (k0 == 0).then(|| &self.bias[p * PANEL..(p + 1) * PANEL]);
                let mut r = t.row;
                while r < t.row + t.rows {
                    let left = t.row + t.rows - r;
                    let a = &x[r * k + k0..];
                    // The tile's rows of y at this panel's columns: inside y (the tile is
                    // inside the output), and no other task writes them.
                    let c = out.ptr.wrapping_add(r * out.stride + p * PANEL);
                    // Even groups (43 rows: 6, 6, 6, 5, 5, 5, 5, 5), not a tail of one row
                    // that would load a panel for two multiply-adds.
                    let step = left.div_ceil(left.div_ceil(MICRO_ROWS));
                    let call = Call {
                        a,
                        lda: k,
                        b,
                        kc,
                        c,
                        ldc: out.stride,
                        cols,
                        bias,
                    };
                    // SAFETY: `c` points at rows `r..r + step` (< rows) and columns
                    // `p * 16..p * 16 + cols` (< n) of y, which has `rows * n` floats and
                    // outlives this call; this task alone writes that block (the tiles are
                    // disjoint). `a` holds `(step - 1) * k + kc` floats: rows `r..r + step`
                    // of x from input `k0` on.
                    unsafe {
                        match step {
                            6 => self.micro::<6>(&call),
                            5 => self.micro::<5>(&call),
                            4 => self.micro::<4>(&call),
                            3 => self.micro::<3>(&call),
                            2 => self.micro::<2>(&call),
                            _ => self.micro::<1>(&call),
                        }
                    }
                    r += step;
                }
            }
            k0 += kc;
            if k0 >= k {
                break;
            }
        }
        if let Some(act) = act {
            let start = t.panel * PANEL;
            for r in t.row..t.row + t.rows {
                // SAFETY: row `r`, columns `start..col_end` of y: inside it, written only by
                // this task, and no other reference to them is live.
                let row = unsafe {
                    std::slice::from_raw_parts_mut(
                        out.ptr.add(r * out.stride + start),
                        col_end - start,
                    )
                };
                vmath::activate(act, row);
            }
        }
    }

    /// Runs the micro-kernel this layer was built for.
    ///
    /// # Safety
    ///
    /// As [`Call`] states.
    unsafe fn micro<const R: usize>(&self, call: &Call<'_>) {
        // SAFETY: the caller upholds `Call`'s contract.
        unsafe { micro_for::<R>(self.kernel, call) }
    }
}

/// Sixteen zeros: the "bias" of [`small_product`]'s sums.
static ZEROS: [f32; PANEL] = [0.0; PANEL];

/// `out[r * ldo + c] = Σ_i a[r * lda + i] · b[i][c]` for `rows` rows and `n` columns on
/// the calling thread, with `b` packed as a [`Linear`]'s weight is (panels of 16 columns,
/// `k` inputs each: `packed[(panel * k + i) * 16 + lane]`, zero-padded): attention's
/// small products, one text and head at a time.
///
/// # Panics
///
/// If a slice is shorter than the shapes say (a bug in the caller).
#[allow(clippy::too_many_arguments, reason = "a strided product's shapes")]
pub(crate) fn small_product(
    kernel: Kernel,
    a: &[f32],
    lda: usize,
    rows: usize,
    packed: &[f32],
    k: usize,
    n: usize,
    out: &mut [f32],
    ldo: usize,
) {
    if rows == 0 || n == 0 {
        return;
    }
    assert!(lda >= k && ldo >= n, "rows hold their inputs and outputs");
    assert!(a.len() >= (rows - 1) * lda + k, "a holds rows x k");
    assert!(out.len() >= (rows - 1) * ldo + n, "out holds rows x n");
    assert!(
        packed.len() >= n.div_ceil(PANEL) * k * PANEL,
        "b holds its panels"
    );
    let c0 = out.as_mut_ptr();
    for p in 0..n.div_ceil(PANEL) {
        let cols = (n - p * PANEL).min(PANEL);
        let b = &packed[p * k * PANEL..(p + 1) * k * PANEL];
        let mut r = 0;
        while r < rows {
            let left = rows - r;
            let step = left.div_ceil(left.div_ceil(MICRO_ROWS));
            let call = Call {
                a: &a[r * lda..],
                lda,
                b,
                kc: k,
                c: c0.wrapping_add(r * ldo + p * PANEL),
                ldc: ldo,
                cols,
                bias: Some(&ZEROS),
            };
            // SAFETY: `c` points at rows `r..r + step` and columns `p * 16..p * 16 + cols`
            // (< n) of `out`, inside it (asserted), and `out` is borrowed mutably here, so
            // nothing else touches it; `a` holds `(step - 1) * lda + k` floats from row `r`
            // (asserted), `b` holds `k * 16`.
            unsafe {
                match step {
                    6 => micro_for::<6>(kernel, &call),
                    5 => micro_for::<5>(kernel, &call),
                    4 => micro_for::<4>(kernel, &call),
                    3 => micro_for::<3>(kernel, &call),
                    2 => micro_for::<2>(kernel, &call),
                    _ => micro_for::<1>(kernel, &call),
                }
            }
            r += step;
        }
    }
}

/// Runs `kernel`'s micro-kernel.
///
/// # Safety
///
/// As [`Call`] states.
unsafe fn micro_for<const R: usize>(kernel: Kernel, call: &Call<'_>) {
    match kernel {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Kernel::Avx2` is only made by `Kernel::native` after checking that the
        // CPU has AVX2 and FMA; the caller upholds `Call`'s contract.
        Kernel::Avx2 => unsafe { avx2::micro::<R>(call) },
        // SAFETY: the caller upholds `Call`'s contract.
        Kernel::Portable => unsafe { portable_micro::<R>(call) },
    }
}

/// The arguments of one micro-kernel call: `R` rows x one panel, over `kc` inputs.
///
/// Contract (the caller's): `a` holds at least `(R - 1) * lda + kc` floats (row `r`'s
/// inputs at `a[r * lda..r * lda + kc]`); `b` holds `kc * 16` floats; `c` is valid for
/// reads and writes of `cols <= 16` floats at `c + r * ldc` for every `r < R`, and nothing
/// else accesses them during the call. With `bias`, the sums start from it (16 floats);
/// without, from what `c` holds.
struct Call<'a> {
    a: &'a [f32],
    lda: usize,
    b: &'a [f32],
    kc: usize,
    c: *mut f32,
    ldc: usize,
    cols: usize,
    bias: Option<&'a [f32]>,
}

/// `x * w + s`: one fused instruction where every CPU of the target has one (aarch64's
/// `FMLA`, which the compiler vectorises), a multiply and an add elsewhere (x86-64's
/// baseline has no FMA, and `mul_add` would call a slow software routine there).
#[inline(always)]
fn multiply_add(x: f32, w: f32, s: f32) -> f32 {
    if cfg!(target_arch = "aarch64") {
        x.mul_add(w, s)
    } else {
        s + x * w
    }
}

/// The micro-kernel in plain Rust: the sums of each row in 16 lanes, which the compiler
/// turns into vector registers.
///
/// # Safety
///
/// `call` meets [`Call`]'s contract.
unsafe fn portable_micro<const R: usize>(call: &Call<'_>) {
    let Call {
        a,
        lda,
        b,
        kc,
        c,
        ldc,
        cols,
        bias,
    } = *call;
    assert!(cols <= PANEL && b.len() >= kc * PANEL);
    assert!(a.len() >= (R - 1) * lda + kc);
    let mut acc = [[0f32; PANEL]; R];
    for (r, acc) in acc.iter_mut().enumerate() {
        match bias {
            Some(bias) => acc.copy_from_slice(&bias[..PANEL]),
            None => {
                // SAFETY: the contract makes `cols` floats at row `r` of `c` readable.
                let row = unsafe { std::slice::from_raw_parts(c.add(r * ldc), cols) };
                acc[..cols].copy_from_slice(row);
            }
        }
    }
    let rows: [&[f32]; R] = std::array::from_fn(|r| &a[r * lda..r * lda + kc]);
    // Whole 16-float arrays and the rows' inputs read before the arithmetic: with no bounds
    // check between them, the compiler keeps each row's sums in vector registers.
    for (i, w) in b.as_chunks::<PANEL>().0.iter().take(kc).enumerate() {
        let xs: [f32; R] = std::array::from_fn(|r| rows[r][i]);
        for (acc, &x) in acc.iter_mut().zip(&xs) {
            for l in 0..PANEL {
                acc[l] = multiply_add(x, w[l], acc[l]);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: the contract makes `cols` floats at row `r` of `c` writable and
        // unaliased.
        let row = unsafe { std::slice::from_raw_parts_mut(c.add(r * ldc), cols) };
        row.copy_from_slice(&acc[..cols]);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m256, _mm256_broadcast_ss, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps,
        _mm256_storeu_ps,
    };

    use super::{Call, PANEL};

    /// `R` rows x 16 columns, summed over `kc` inputs with FMA.
    ///
    /// # Safety
    ///
    /// The CPU has AVX2 and FMA; `call` meets [`Call`]'s contract.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn micro<const R: usize>(call: &Call<'_>) {
        let Call {
            a,
            lda,
            b,
            kc,
            c,
            ldc,
            cols,
            bias,
        } = *call;
        assert!(cols <= PANEL && b.len() >= kc * PANEL);
        assert!(R >= 1 && a.len() >= (R - 1) * lda + kc);
        let mut acc = [[_mm256_setzero_ps(); 2]; R];
        for (r, acc) in acc.iter_mut().enumerate() {
            let mut start = [0f32; PANEL];
            match bias {
                Some(bias) => start.copy_from_slice(&bias[..PANEL]),
                None => {
                    // SAFETY: the contract makes `cols` floats at row `r` of `c` readable.
                    let row = unsafe { std::slice::from_raw_parts(c.add(r * ldc), cols) };
                    start[..cols].copy_from_slice(row);
                }
            }
            // SAFETY: `start` has 16 floats: two unaligned 8-float loads.
            unsafe {
                acc[0] = _mm256_loadu_ps(start.as_ptr());
                acc[1] = _mm256_loadu_ps(start.as_ptr().add(8));
            }
        }
        let (ap, bp) = (a.as_ptr(), b.as_ptr());
        for i in 0..kc {
            // SAFETY: `i < kc`, and `b` has `kc * 16` floats (asserted): 16 floats at
            // `i * 16`.
            let (w0, w1): (__m256, __m256) = unsafe {
                (
                    _mm256_loadu_ps(bp.add(i * PANEL)),
                    _mm256_loadu_ps(bp.add(i * PANEL + 8)),
                )
            };
            for (r, acc) in acc.iter_mut().enumerate() {
                // SAFETY: `r < R` and `i < kc`, so `r * lda + i < (R - 1) * lda + kc <=
                // a.len()` (asserted).
                let x = unsafe { _mm256_broadcast_ss(&*ap.add(r * lda + i)) };
                acc[0] = _mm256_fmadd_ps(x, w0, acc[0]);
                acc[1] = _mm256_fmadd_ps(x, w1, acc[1]);
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            let dst = c.wrapping_add(r * ldc);
            if cols == PANEL {
                // SAFETY: the contract makes 16 floats at row `r` of `c` writable.
                unsafe {
                    _mm256_storeu_ps(dst, acc[0]);
                    _mm256_storeu_ps(dst.add(8), acc[1]);
                }
            } else {
                let mut sums = [0f32; PANEL];
                // SAFETY: `sums` has 16 floats.
                unsafe {
                    _mm256_storeu_ps(sums.as_mut_ptr(), acc[0]);
                    _mm256_storeu_ps(sums.as_mut_ptr().add(8), acc[1]);
                }
                // SAFETY: the contract makes `cols` floats at row `r` of `c` writable and
                // unaliased.
                let row = unsafe { std::slice::from_raw_parts_mut(dst, cols) };
                row.copy_from_slice(&sums[..cols]);
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

    fn random(len: usize, seed: &mut u64) -> Vec<f32> {
        (0..len).map(|_| lcg(seed)).collect()
    }

    fn reference(w: &[f32], b: &[f32], x: &[f32], n: usize, k: usize) -> Vec<f64> {
        let rows = x.len() / k.max(1);
        let mut y = vec![0.0f64; rows * n];
        for r in 0..rows {
            for c in 0..n {
                let mut acc = f64::from(b[c]);
                for i in 0..k {
                    acc += f64::from(x[r * k + i]) * f64::from(w[c * k + i]);
                }
                y[r * n + c] = acc;
            }
        }
        y
    }

    fn kernels() -> Vec<Kernel> {
        let mut kernels = vec![Kernel::Portable];
        if Kernel::native() != Kernel::Portable {
            kernels.push(Kernel::native());
        } else {
            println!("no AVX2 + FMA on this CPU: only the portable kernel is checked");
        }
        kernels
    }

    /// Every kernel this CPU has against an f64 product of the same numbers, over ragged
    /// shapes: partial panels, several input blocks (k > 256), several row and column
    /// tiles, every micro-kernel row count, and parallel and serial dispatch.
    #[test]
    fn kernels_agree_with_a_plain_product() {
        let mut seed = 7;
        for &(n, k) in &[
            (16, 32),
            (40, 7),
            (33, 64),
            (64, 384),
            (3, 1),
            (100, 600),
            (70, 257),
        ] {
            let w = random(n * k, &mut seed);
            let b = random(n, &mut seed);
            for kernel in kernels() {
                let layer = Linear::new(&w, &b, n, k, kernel);
                for rows in [0, 1, 2, 3, 4, 5, 6, 7, 13, 97, 200] {
                    let x = random(rows * k, &mut seed);
                    let want = reference(&w, &b, &x, n, k);
                    // A buffer of the right length is reused without zeroing: every
                    // output must still be written (NaN would survive otherwise).
                    let mut y = vec![f32::NAN; if rows % 2 == 0 { rows * n } else { 3 }];
                    layer.forward(&x, rows, &mut y, None);
                    assert_eq!(y.len(), rows * n);
                    let tol = 1e-5 * (k as f64).sqrt() + 1e-6;
                    for (i, (g, w)) in y.iter().zip(&want).enumerate() {
                        assert!(
                            (f64::from(*g) - w).abs() <= tol,
                            "{kernel:?} n {n} k {k} rows {rows} at {i}: {g} vs {w}"
                        );
                    }
                }
            }
        }
    }

    /// The activation applied after the product is the one asked for, on every output
    /// column (the tiles' edges included) and no other.
    #[test]
    fn activations_apply_to_every_output() {
        let (n, k, rows) = (150, 40, 110);
        let mut seed = 3;
        let w = random(n * k, &mut seed);
        let b = random(n, &mut seed);
        let x = random(rows * k, &mut seed);
        for kernel in kernels() {
            let layer = Linear::new(&w, &b, n, k, kernel);
            let mut plain = Vec::new();
            layer.forward(&x, rows, &mut plain, None);
            for act in [HiddenAct::Gelu, HiddenAct::GeluApproximate, HiddenAct::Relu] {
                let mut want = plain.clone();
                vmath::activate(act, &mut want);
                let mut got = Vec::new();
                layer.forward(&x, rows, &mut got, Some(act));
                assert_eq!(got, want, "{kernel:?} {act:?}");
            }
        }
    }

    /// A row's result does not depend on which other rows share its call, bit for bit (so
    /// a text's vector is the same alone or in a batch).
    #[test]
    fn rows_are_independent() {
        let (n, k) = (48, 300);
        let mut seed = 11;
        let w = random(n * k, &mut seed);
        let b = random(n, &mut seed);
        let x = random(137 * k, &mut seed);
        for kernel in kernels() {
            let layer = Linear::new(&w, &b, n, k, kernel);
            let mut all = Vec::new();
            layer.forward(&x, 137, &mut all, None);
            for r in [0, 5, 8, 95, 96, 136] {
                let mut one = Vec::new();
                layer.forward(&x[r * k..(r + 1) * k], 1, &mut one, None);
                assert_eq!(one[..], all[r * n..(r + 1) * n], "{kernel:?} row {r}");
            }
        }
    }
}
