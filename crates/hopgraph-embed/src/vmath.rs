//! The encoder's element-wise and row-wise math (activations, softmax, layer norm,
//! attention's small products) in branch-free loops the compiler vectorises.
//!
//! libm's `erff`/`expf` are scalar calls: they cost ~11% of an f32 forward pass on GELU
//! alone. Here `exp` is a range reduction plus a degree-6 polynomial and `erf` is
//! Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7 in exact arithmetic; Handbook of
//! Mathematical Functions, 1964, p. 299), both pure arithmetic. Each public function is
//! compiled three times: for the baseline CPU, for AVX2 + FMA and for AVX-512 (chosen at
//! run time, [`level`]), since the default x86-64 target only has 128-bit SSE2.

use crate::spec::HiddenAct;

/// Compiles `$body` for the baseline target, for AVX2 + FMA and for AVX-512, and runs the
/// widest copy the CPU has (chosen at run time, [`level`]). The body must be plain safe
/// code.
macro_rules! vectorised {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
                fn wide($($arg: $ty),*) $(-> $ret)? { body($($arg),*) }
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($arg: $ty),*) $(-> $ret)? { body($($arg),*) }
                match $crate::vmath::level() {
                    // SAFETY: `level()` checked that the CPU has every feature `wide` is
                    // compiled for.
                    $crate::vmath::Level::Avx512 => return unsafe { wide($($arg),*) },
                    // SAFETY: `level()` checked that the CPU has AVX2 and FMA.
                    $crate::vmath::Level::Avx2 => return unsafe { avx2($($arg),*) },
                    $crate::vmath::Level::Baseline => {}
                }
            }
            body($($arg),*)
        }
    };
}

/// The widest vector instructions the `vectorised!` functions use on this CPU (x86-64;
/// elsewhere only the baseline copy exists: NEON on aarch64).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    /// SSE2.
    Baseline,
    /// AVX2 and FMA.
    Avx2,
    /// AVX-512 F/VL/BW/DQ and FMA.
    Avx512,
}

/// Which copies of the `vectorised!` functions this CPU runs (std caches the CPUID
/// answers).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn level() -> Level {
    use std::arch::is_x86_feature_detected as has;
    if !(has!("avx2") && has!("fma")) {
        return Level::Baseline;
    }
    if has!("avx512f") && has!("avx512vl") && has!("avx512bw") && has!("avx512dq") {
        return Level::Avx512;
    }
    Level::Avx2
}

/// e^x for x in about [-87, 88] (clamped there), relative error ~2e-7.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in a part exact in f32 and the rest (Cody & Waite).
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5 * 2^23: adding and subtracting it rounds to an integer without a libm call.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * LOG2E + ROUND) - ROUND;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    // e^r for |r| <= ln2 / 2: Taylor to r^6 (next term < 1e-7 relative).
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // n is an integer in [-126, 127]: 2^n by building the exponent field.
    #[allow(clippy::cast_possible_truncation, reason = "n is in [-126, 127]")]
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    p * scale
}

/// The error function, |error| < 3e-7: Abramowitz & Stegun 7.1.26 for |x| >= 0.5, where
/// its `1 - p(t) e^{-x^2}` does not cancel, and the Maclaurin series to x^11 below (next
/// term < 3e-8 there). Both are computed and one is selected, so the loop stays branch-free.
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_8 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let far = 1.0 - poly * exp(-a * a);
    let z = a * a;
    // 2/sqrt(pi) * (a - a^3/3 + a^5/10 - a^7/42 + a^9/216 - a^11/1320)
    let near = std::f32::consts::FRAC_2_SQRT_PI
        * a
        * (1.0
            + z * (-1.0 / 3.0
                + z * (1.0 / 10.0 + z * (-1.0 / 42.0 + z * (1.0 / 216.0 + z * (-1.0 / 1320.0))))));
    let y = if a < 0.5 { near } else { far };
    y.copysign(x)
}

vectorised! {
    /// GELU as BERT defines it, `x * (1 + erf(x / sqrt 2)) / 2`, in place.
    pub(crate) fn gelu_erf(xs: &mut [f32]) {
        for x in xs.iter_mut() {
            *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
        }
    }
}

vectorised! {
    /// GELU's tanh approximation, `x * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2`, in
    /// place.
    pub(crate) fn gelu_tanh(xs: &mut [f32]) {
        const C: f32 = 0.797_884_6; // sqrt(2 / pi)
        for x in xs.iter_mut() {
            let z = C * (*x + 0.044_715 * *x * *x * *x);
            // tanh z = 1 - 2 / (e^{2z} + 1); exp clamps, so no overflow.
            let tanh = 1.0 - 2.0 / (exp(2.0 * z) + 1.0);
            *x = 0.5 * *x * (1.0 + tanh);
        }
    }
}

/// The feed-forward activation `act`, in place.
pub(crate) fn activate(act: HiddenAct, xs: &mut [f32]) {
    match act {
        HiddenAct::Gelu => gelu_erf(xs),
        HiddenAct::GeluApproximate => gelu_tanh(xs),
        HiddenAct::Relu => relu(xs),
    }
}

vectorised! {
    /// max(x, 0) in place.
    pub(crate) fn relu(xs: &mut [f32]) {
        for x in xs.iter_mut() {
            *x = x.max(0.0);
        }
    }
}

/// Sum with 16 independent lanes, so the loop vectorises without reassociation.
#[inline(always)]
fn sum(xs: &[f32]) -> f32 {
    let mut lanes = [0f32; 16];
    let mut chunks = xs.chunks_exact(16);
    for c in &mut chunks {
        for (l, &x) in lanes.iter_mut().zip(c) {
            *l += x;
        }
    }
    lanes.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>()
}

vectorised! {
    /// `x = layer_norm(x + residual) * gamma + beta` for every row of `hidden` floats
    /// (mean and biased variance over the row, as PyTorch's `LayerNorm`).
    pub(crate) fn add_layer_norm(
        xs: &mut [f32],
        residual: Option<&[f32]>,
        gamma: &[f32],
        beta: &[f32],
        eps: f32,
    ) {
        let hidden = gamma.len();
        if let Some(res) = residual {
            for (x, r) in xs.iter_mut().zip(res) {
                *x += r;
            }
        }
        #[allow(clippy::cast_precision_loss, reason = "a row is a few thousand floats")]
        let inv_n = 1.0 / hidden as f32;
        for row in xs.chunks_exact_mut(hidden) {
            let mean = sum(row) * inv_n;
            let mut sq = [0f32; 16];
            let mut chunks = row.chunks_exact(16);
            for c in &mut chunks {
                for (s, &x) in sq.iter_mut().zip(c) {
                    *s += (x - mean) * (x - mean);
                }
            }
            let var = (sq.iter().sum::<f32>()
                + chunks.remainder().iter().map(|&x| (x - mean) * (x - mean)).sum::<f32>())
                * inv_n;
            let inv = 1.0 / (var + eps).sqrt();
            for ((x, g), b) in row.iter_mut().zip(gamma).zip(beta) {
                *x = (*x - mean) * inv * g + b;
            }
        }
    }
}

vectorised! {
    /// Softmax numerators of one row of attention scores in place: `exp(scale (s_j -
    /// max))` for the first `len` scores, 0 after them (padding); returns 1 / their sum.
    /// `scale` > 0 (1 / sqrt(dim)), so scaling after taking the maximum is the same.
    pub(crate) fn softmax_numerators(s: &mut [f32], len: usize, scale: f32) -> f32 {
        let len = len.min(s.len());
        let mut lanes = [f32::NEG_INFINITY; 16];
        let mut chunks = s[..len].chunks_exact(16);
        for c in &mut chunks {
            for (l, &x) in lanes.iter_mut().zip(c) {
                *l = l.max(x);
            }
        }
        let max = lanes
            .iter()
            .chain(chunks.remainder())
            .copied()
            .fold(f32::NEG_INFINITY, f32::max);
        for sj in &mut s[..len] {
            *sj = exp((*sj - max) * scale);
        }
        s[len..].fill(0.0);
        1.0 / sum(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn libm_erf(x: f64) -> f64 {
        // erf by its Taylor series (converges fast for |x| <= 3) and erfc's continued
        // fraction beyond: an f64 reference good to ~1e-12.
        if x.abs() <= 3.0 {
            let mut term = x;
            let mut total = x;
            let mut n = 0.0;
            loop {
                n += 1.0;
                term *= -x * x / n;
                let add = term / (2.0 * n + 1.0);
                total += add;
                if add.abs() < 1e-17 {
                    break;
                }
            }
            total * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            let a = x.abs();
            let mut f = 0.0;
            for k in (1..60).rev() {
                f = f64::from(k) / 2.0 / (a + f);
            }
            let erfc = (-a * a).exp() / std::f64::consts::PI.sqrt() / (a + f);
            (1.0 - erfc).copysign(x)
        }
    }

    #[test]
    fn exp_is_accurate() {
        let mut x = -87.0f32;
        while x < 88.0 {
            let want = f64::from(x).exp();
            let got = f64::from(exp(x));
            assert!(
                ((got - want) / want).abs() < 5e-7,
                "exp({x}) = {got}, want {want}"
            );
            x += 0.0137;
        }
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(-1000.0) >= 0.0 && exp(-1000.0) < 1e-37);
        assert!(exp(1000.0).is_finite());
    }

    #[test]
    fn erf_is_accurate() {
        let mut x = -6.0f32;
        while x < 6.0 {
            let want = libm_erf(f64::from(x));
            let got = f64::from(erf(x));
            assert!((got - want).abs() < 3e-7, "erf({x}) = {got}, want {want}");
            x += 0.001_3;
        }
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(f32::INFINITY), 1.0);
        assert_eq!(erf(f32::NEG_INFINITY), -1.0);
    }

    #[test]
    fn activations() {
        let xs: Vec<f32> = (-400..400).map(|i| i as f32 * 0.02).collect();
        let mut g = xs.clone();
        gelu_erf(&mut g);
        for (&x, &y) in xs.iter().zip(&g) {
            let want = 0.5 * f64::from(x) * (1.0 + libm_erf(f64::from(x) / 2f64.sqrt()));
            assert!((f64::from(y) - want).abs() < 1e-6, "gelu({x})");
        }
        let mut t = xs.clone();
        gelu_tanh(&mut t);
        for (&x, &y) in xs.iter().zip(&t) {
            let x = f64::from(x);
            let want = 0.5
                * x
                * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh());
            assert!((f64::from(y) - want).abs() < 1e-5, "gelu_tanh({x})");
        }
        let mut r = xs.clone();
        relu(&mut r);
        assert!(r.iter().zip(&xs).all(|(&y, &x)| y == x.max(0.0)));
    }

    #[test]
    fn layer_norm_matches_definition() {
        let hidden = 37;
        let xs: Vec<f32> = (0..hidden * 3)
            .map(|i| ((i * 7919) % 101) as f32 * 0.1 - 3.0)
            .collect();
        let res: Vec<f32> = (0..hidden * 3).map(|i| (i % 5) as f32).collect();
        let gamma: Vec<f32> = (0..hidden).map(|i| 1.0 + i as f32 * 0.01).collect();
        let beta: Vec<f32> = (0..hidden).map(|i| i as f32 * -0.02).collect();
        let mut got = xs.clone();
        add_layer_norm(&mut got, Some(&res), &gamma, &beta, 1e-12);
        for r in 0..3 {
            let row: Vec<f64> = (0..hidden)
                .map(|i| f64::from(xs[r * hidden + i] + res[r * hidden + i]))
                .collect();
            let mean = row.iter().sum::<f64>() / hidden as f64;
            let var = row.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / hidden as f64;
            for i in 0..hidden {
                let want = (row[i] - mean) / (var + 1e-12).sqrt() * f64::from(gamma[i])
                    + f64::from(beta[i]);
                assert!((f64::from(got[r * hidden + i]) - want).abs() < 1e-4);
            }
        }
    }
}
