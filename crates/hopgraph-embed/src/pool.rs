//! Pooling token vectors into one vector per text, and L2 normalisation, over plain
//! slices: the same arithmetic as sentence-transformers' `Pooling` and `Normalize`
//! modules, written out so it can be tested against hand-computed answers.

use crate::spec::Pooling;

/// Pools the `len` unpadded token vectors of one text. `tokens` is the text's row of the
/// encoder output, `seq_len * hidden` floats (padded positions after the first `len`).
/// `len >= 1` always holds: every text has at least `[CLS]` and `[SEP]`.
pub(crate) fn pool(pooling: Pooling, tokens: &[f32], hidden: usize, len: usize) -> Vec<f32> {
    let rows = tokens.chunks_exact(hidden).take(len);
    match pooling {
        Pooling::Cls => tokens.iter().take(hidden).copied().collect(),
        Pooling::Max => {
            let mut out = vec![f32::NEG_INFINITY; hidden];
            for row in rows {
                for (o, &x) in out.iter_mut().zip(row) {
                    *o = o.max(x);
                }
            }
            out
        }
        Pooling::Mean | Pooling::MeanSqrtLen => {
            let mut out = vec![0f32; hidden];
            for row in rows {
                for (o, &x) in out.iter_mut().zip(row) {
                    *o += x;
                }
            }
            // sentence-transformers clamps the count at 1e-9; len >= 1 here anyway.
            let count = len.max(1) as f32;
            let divisor = if pooling == Pooling::Mean {
                count
            } else {
                count.sqrt()
            };
            for o in &mut out {
                *o /= divisor;
            }
            out
        }
    }
}

/// Scales `v` to unit L2 norm, as `torch.nn.functional.normalize` does (a norm below
/// 1e-12 is taken as 1e-12, so a zero vector stays zero rather than becoming NaN).
pub(crate) fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    for x in v {
        *x /= norm;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Two real tokens and one padded position, hidden = 2.
    const TOKENS: [f32; 6] = [1.0, -2.0, 3.0, 4.0, 100.0, 100.0];

    #[test]
    fn mean_ignores_padding() {
        assert_eq!(pool(Pooling::Mean, &TOKENS, 2, 2), vec![2.0, 1.0]);
    }

    #[test]
    fn mean_sqrt_len() {
        let s = 2f32.sqrt();
        assert_eq!(
            pool(Pooling::MeanSqrtLen, &TOKENS, 2, 2),
            vec![4.0 / s, 2.0 / s]
        );
    }

    #[test]
    fn max_ignores_padding() {
        assert_eq!(pool(Pooling::Max, &TOKENS, 2, 2), vec![3.0, 4.0]);
    }

    #[test]
    fn cls_is_first_token() {
        assert_eq!(pool(Pooling::Cls, &TOKENS, 2, 2), vec![1.0, -2.0]);
    }

    #[test]
    fn normalize_unit_and_zero() {
        let mut v = vec![3.0, 4.0];
        normalize(&mut v);
        assert_eq!(v, vec![0.6, 0.8]);
        let mut z = vec![0.0, 0.0];
        normalize(&mut z);
        assert_eq!(z, vec![0.0, 0.0]);
    }
}
