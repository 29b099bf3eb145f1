//! The encoder's tensors from `model.safetensors`, as f32, through the `safetensors` crate
//! (the format's reference implementation: a JSON header of names, dtypes, shapes and byte
//! ranges, then the raw little-endian data; the crate validates the header).
//!
//! Names follow Hugging Face's `BertModel` (`embeddings.word_embeddings.weight`,
//! `encoder.layer.0.attention.self.query.weight`, ...), with or without a `bert.` or
//! `<model_type>.` prefix, as checkpoints saved from a task head have. f32, f16 and bf16
//! tensors are read (the latter two widened exactly); any other dtype is refused.

use safetensors::{Dtype, SafeTensors};

/// A parsed `model.safetensors` and the prefix its encoder tensors have.
pub(crate) struct Weights<'a> {
    tensors: SafeTensors<'a>,
    prefix: String,
}

impl<'a> Weights<'a> {
    /// Parses the file's bytes and finds the encoder's prefix.
    ///
    /// # Errors
    ///
    /// A message saying why the bytes are not a safetensors file.
    pub(crate) fn parse(bytes: &'a [u8], model_type: Option<&str>) -> Result<Self, String> {
        let tensors =
            SafeTensors::deserialize(bytes).map_err(|e| format!("not a safetensors file: {e}"))?;
        let has = |name: &str| tensors.tensor(name).is_ok();
        let prefix = if has("bert.embeddings.word_embeddings.weight") {
            "bert.".to_string()
        } else if has("embeddings.word_embeddings.weight") {
            String::new()
        } else if let Some(t) = model_type {
            format!("{t}.")
        } else {
            String::new()
        };
        Ok(Weights { tensors, prefix })
    }

    /// The tensor `name` (after the prefix) as f32, checked to have `shape`.
    ///
    /// # Errors
    ///
    /// A message naming the tensor when it is missing, has another shape, or a dtype
    /// other than f32, f16 and bf16.
    pub(crate) fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let full = format!("{}{name}", self.prefix);
        let view = self
            .tensors
            .tensor(&full)
            .map_err(|_| format!("tensor {full} is missing"))?;
        if view.shape() != shape {
            return Err(format!(
                "tensor {full} has shape {:?}, the config needs {shape:?}",
                view.shape()
            ));
        }
        let data = view.data();
        let out: Vec<f32> = match view.dtype() {
            Dtype::F32 => data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::BF16 => data
                .chunks_exact(2)
                .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
                .collect(),
            Dtype::F16 => data
                .chunks_exact(2)
                .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
            other => {
                return Err(format!(
                    "tensor {full} has dtype {other:?}: not f32/f16/bf16"
                ));
            }
        };
        if out.len() != shape.iter().product::<usize>() {
            return Err(format!("tensor {full} holds {} values", out.len()));
        }
        Ok(out)
    }
}

/// The f32 an IEEE half-precision number stands for (exact: every f16 is an f32).
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exponent = u32::from((h >> 10) & 0x1f);
    let mantissa = u32::from(h & 0x3ff);
    let bits = match (exponent, mantissa) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: m * 2^-24, exactly representable as a normal f32.
            #[allow(clippy::cast_precision_loss, reason = "m < 1024 is exact")]
            let v = m as f32 * f32::from_bits(0x3380_0000); // 2^-24
            return if sign != 0 { -v } else { v };
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_widens_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8000).to_bits(), (-0.0f32).to_bits());
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    fn file(name: &str, dtype: Dtype, shape: Vec<usize>, data: &[u8]) -> Vec<u8> {
        let view = safetensors::tensor::TensorView::new(dtype, shape, data).expect("view");
        safetensors::serialize([(name, view)], None).expect("serialize")
    }

    #[test]
    fn reads_dtypes_prefixes_and_refuses_mismatches() {
        let values = [1.5f32, -2.0, 0.25];
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let f = file(
            "bert.embeddings.word_embeddings.weight",
            Dtype::F32,
            vec![3],
            &bytes,
        );
        let w = Weights::parse(&f, None).expect("parse");
        assert_eq!(
            w.get("embeddings.word_embeddings.weight", &[3]),
            Ok(values.to_vec())
        );
        let shape = w.get("embeddings.word_embeddings.weight", &[1, 3]);
        assert!(shape.is_err_and(|e| e.contains("shape")));
        let missing = w.get("embeddings.LayerNorm.weight", &[3]);
        assert!(missing.is_err_and(|e| e.contains("bert.embeddings.LayerNorm.weight")));

        let bf16: Vec<u8> = values
            .iter()
            .flat_map(|v| crate::bf16::to_bf16(*v).to_le_bytes())
            .collect();
        let f = file(
            "embeddings.word_embeddings.weight",
            Dtype::BF16,
            vec![3],
            &bf16,
        );
        let w = Weights::parse(&f, Some("bert")).expect("parse");
        assert_eq!(
            w.get("embeddings.word_embeddings.weight", &[3]),
            Ok(values.to_vec())
        );
        let f = file("x", Dtype::I64, vec![1], &[0; 8]);
        let w = Weights::parse(&f, None).expect("parse");
        assert!(w.get("x", &[1]).is_err_and(|e| e.contains("dtype")));
        assert!(Weights::parse(b"not a file", None).is_err());
    }
}
