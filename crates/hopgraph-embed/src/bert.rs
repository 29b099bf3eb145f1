//! A BERT encoder forward pass of our own, for CPUs whose bf16 dot-product instructions
//! make the dense layers twice as fast as f32 (see `bf16.rs`).
//!
//! The same network as `candle_transformers::models::bert::BertModel` (and Hugging Face's
//! `BertModel`): embeddings (word + position + token type, layer norm), then per layer
//! self-attention (one fused Q/K/V product, softmax(q kᵀ / sqrt(d)) v per head, output
//! product, residual, layer norm) and the feed-forward block (product, GELU, product,
//! residual, layer norm). Two differences in how it is computed, neither in what:
//!
//! - **Ragged batches.** The texts of a batch are stacked as rows with no padding; the
//!   dense layers run over all rows at once and attention runs per text over that text's
//!   own rows. A padded position is masked out of attention in BERT anyway, so the result
//!   is the same, without the work on padding or a mask.
//! - **Precision.** Dense products take bf16 inputs and sum in f32; everything else
//!   (embeddings, layer norms, softmax, attention's products, GELU) is f32.

use candle_nn::VarBuilder;
use candle_transformers::models::bert::{Config, HiddenAct};
use rayon::prelude::*;

use crate::bf16::{Kernel, PackedLinear};
use crate::vmath;

/// One text's token ids and token type ids (equal lengths).
pub(crate) struct Tokens<'a> {
    pub(crate) ids: &'a [u32],
    pub(crate) types: &'a [u32],
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

struct Layer {
    /// Q, K and V stacked: `3 * hidden` outputs.
    qkv: PackedLinear,
    attention_out: PackedLinear,
    attention_norm: Norm,
    up: PackedLinear,
    down: PackedLinear,
    output_norm: Norm,
}

pub(crate) struct BertBf16 {
    kernel: Kernel,
    hidden: usize,
    heads: usize,
    eps: f32,
    act: HiddenAct,
    vocab: usize,
    type_vocab: usize,
    max_positions: usize,
    /// `[vocab, hidden]`, `[max_positions, hidden]`, `[type_vocab, hidden]`.
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

fn tensor(vb: &VarBuilder, shape: &[usize], name: &str) -> candle_core::Result<Vec<f32>> {
    vb.get(shape, name)?.flatten_all()?.to_vec1::<f32>()
}

fn norm(vb: &VarBuilder, hidden: usize) -> candle_core::Result<Norm> {
    Ok(Norm {
        gamma: tensor(vb, &[hidden], "weight")?,
        beta: tensor(vb, &[hidden], "bias")?,
    })
}

fn linear(vb: &VarBuilder, n: usize, k: usize) -> candle_core::Result<PackedLinear> {
    let w = tensor(vb, &[n, k], "weight")?;
    let b = tensor(vb, &[n], "bias")?;
    Ok(PackedLinear::new(&w, &b, n, k))
}

impl BertBf16 {
    /// Reads the weights the way `BertModel::load` names them (with or without a `bert.`
    /// or `<model_type>.` prefix) and packs the dense layers.
    pub(crate) fn load(
        vb: &VarBuilder,
        config: &Config,
        kernel: Kernel,
    ) -> candle_core::Result<Self> {
        let root = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else if vb.contains_tensor("embeddings.word_embeddings.weight") {
            vb.clone()
        } else if let Some(t) = config.model_type.as_deref() {
            vb.pp(t)
        } else {
            vb.clone()
        };
        let h = config.hidden_size;
        let emb = root.pp("embeddings");
        let word = tensor(
            &emb.pp("word_embeddings"),
            &[config.vocab_size, h],
            "weight",
        )?;
        let position = tensor(
            &emb.pp("position_embeddings"),
            &[config.max_position_embeddings, h],
            "weight",
        )?;
        let token_type = tensor(
            &emb.pp("token_type_embeddings"),
            &[config.type_vocab_size, h],
            "weight",
        )?;
        let embedding_norm = norm(&emb.pp("LayerNorm"), h)?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let l = root.pp(format!("encoder.layer.{i}"));
            let att = l.pp("attention");
            let mut w = Vec::with_capacity(3 * h * h);
            let mut b = Vec::with_capacity(3 * h);
            for part in ["query", "key", "value"] {
                let p = att.pp("self").pp(part);
                w.extend(tensor(&p, &[h, h], "weight")?);
                b.extend(tensor(&p, &[h], "bias")?);
            }
            layers.push(Layer {
                qkv: PackedLinear::new(&w, &b, 3 * h, h),
                attention_out: linear(&att.pp("output").pp("dense"), h, h)?,
                attention_norm: norm(&att.pp("output").pp("LayerNorm"), h)?,
                up: linear(
                    &l.pp("intermediate").pp("dense"),
                    config.intermediate_size,
                    h,
                )?,
                down: linear(&l.pp("output").pp("dense"), h, config.intermediate_size)?,
                output_norm: norm(&l.pp("output").pp("LayerNorm"), h)?,
            });
        }
        #[allow(clippy::cast_possible_truncation, reason = "epsilons are tiny")]
        let eps = config.layer_norm_eps as f32;
        Ok(BertBf16 {
            kernel,
            hidden: h,
            heads: config.num_attention_heads,
            eps,
            act: config.hidden_act,
            vocab: config.vocab_size,
            type_vocab: config.type_vocab_size,
            max_positions: config.max_position_embeddings,
            word,
            position,
            token_type,
            embedding_norm,
            layers,
        })
    }

    /// `"bf16-avx512"` or `"bf16-emulated"`.
    pub(crate) fn kernel_name(&self) -> &'static str {
        match self.kernel {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => "bf16-avx512",
            Kernel::Emulated => "bf16-emulated",
        }
    }

    /// The last layer's token vectors of every text, stacked: `sum(len) * hidden` floats,
    /// text after text.
    pub(crate) fn forward(&self, texts: &[Tokens<'_>]) -> candle_core::Result<Vec<f32>> {
        let h = self.hidden;
        let rows: usize = texts.iter().map(|t| t.ids.len()).sum();
        let mut x = vec![0f32; rows * h];
        let mut at = 0;
        for t in texts {
            if t.ids.len() != t.types.len() || t.ids.len() > self.max_positions {
                candle_core::bail!(
                    "a text of {} tokens ({} type ids) does not fit {} positions",
                    t.ids.len(),
                    t.types.len(),
                    self.max_positions
                );
            }
            for (pos, (&id, &ty)) in t.ids.iter().zip(t.types).enumerate() {
                let (id, ty) = (id as usize, ty as usize);
                if id >= self.vocab || ty >= self.type_vocab {
                    candle_core::bail!("token id {id} / type {ty} outside the model's tables");
                }
                let row = &mut x[at * h..(at + 1) * h];
                let w = &self.word[id * h..(id + 1) * h];
                let p = &self.position[pos * h..(pos + 1) * h];
                let ty = &self.token_type[ty * h..(ty + 1) * h];
                for (((o, w), p), ty) in row.iter_mut().zip(w).zip(p).zip(ty) {
                    *o = w + ty + p;
                }
                at += 1;
            }
        }
        let n = &self.embedding_norm;
        vmath::add_layer_norm(&mut x, None, &n.gamma, &n.beta, self.eps);

        let spans: Vec<(usize, usize)> = texts
            .iter()
            .scan(0, |start, t| {
                let s = *start;
                *start += t.ids.len();
                Some((s, t.ids.len()))
            })
            .collect();
        let (mut qkv, mut context, mut tmp, mut up) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for layer in &self.layers {
            layer.qkv.forward(self.kernel, &x, rows, &mut qkv);
            self.attention(&qkv, &spans, rows, &mut context);
            layer
                .attention_out
                .forward(self.kernel, &context, rows, &mut tmp);
            let n = &layer.attention_norm;
            vmath::add_layer_norm(&mut tmp, Some(&x), &n.gamma, &n.beta, self.eps);
            std::mem::swap(&mut x, &mut tmp);
            layer.up.forward(self.kernel, &x, rows, &mut up);
            match self.act {
                HiddenAct::Gelu => vmath::gelu_erf(&mut up),
                HiddenAct::GeluApproximate => vmath::gelu_tanh(&mut up),
                HiddenAct::Relu => vmath::relu(&mut up),
            }
            layer.down.forward(self.kernel, &up, rows, &mut tmp);
            let n = &layer.output_norm;
            vmath::add_layer_norm(&mut tmp, Some(&x), &n.gamma, &n.beta, self.eps);
            std::mem::swap(&mut x, &mut tmp);
        }
        Ok(x)
    }

    /// Self-attention of every text and head, from the stacked Q/K/V rows into `out`
    /// (`rows * hidden`, heads side by side as BERT concatenates them). Text-heads run in
    /// parallel; each writes its own small buffer, copied into place after.
    fn attention(&self, qkv: &[f32], spans: &[(usize, usize)], rows: usize, out: &mut Vec<f32>) {
        let h = self.hidden;
        let dim = h / self.heads;
        let stride = 3 * h;
        let jobs: Vec<(usize, usize)> = (0..spans.len())
            .flat_map(|t| (0..self.heads).map(move |head| (t, head)))
            .collect();
        let results: Vec<Vec<f32>> = jobs
            .par_iter()
            .map_init(
                || (Vec::new(), Vec::new()),
                |scratch, &(t, head)| {
                    let (start, len) = spans[t];
                    let base = start * stride + head * dim;
                    let mut o = vec![0f32; len * dim];
                    vmath::attention_head(
                        &qkv[base..],
                        &qkv[base + h..],
                        &qkv[base + 2 * h..],
                        vmath::HeadShape { stride, len, dim },
                        scratch,
                        &mut o,
                    );
                    o
                },
            )
            .collect();
        out.clear();
        out.resize(rows * h, 0.0);
        for (&(t, head), o) in jobs.iter().zip(&results) {
            let (start, len) = spans[t];
            for i in 0..len {
                let row = (start + i) * h + head * dim;
                out[row..row + dim].copy_from_slice(&o[i * dim..(i + 1) * dim]);
            }
        }
    }
}
