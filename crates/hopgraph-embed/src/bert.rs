//! The crate's BERT encoder forward pass, generic over how the dense layers compute:
//! f32 (`gemm.rs`, the default) or bf16 inputs summed in f32 (`bf16.rs`, on CPUs whose
//! bf16 dot-product instructions make the dense layers twice as fast).
//!
//! The same network as Hugging Face's `BertModel`: embeddings (word + position + token type, layer norm), then per layer
//! self-attention (one fused Q/K/V product, softmax(q kᵀ / sqrt(d)) v per head, output
//! product, residual, layer norm) and the feed-forward block (product, GELU, product,
//! residual, layer norm). Two differences in how it is computed, neither in what:
//!
//! - **Ragged batches.** The texts of a batch are stacked as rows with no padding; the
//!   dense layers run over all rows at once and attention runs per text over that text's
//!   own rows. A padded position is masked out of attention in BERT anyway, so the result
//!   is the same, without the work on padding or a mask.
//! - **Precision.** Everything but the dense products (embeddings, layer norms, softmax,
//!   attention's products, GELU) is f32; the dense products are f32 or bf16 by `D`.
//! - **Fusion.** The feed-forward activation runs inside the first product, on each output
//!   tile while it is in cache.

use rayon::prelude::*;

use crate::attention;
use crate::gemm;
use crate::spec::{BertConfig, HiddenAct};
use crate::vmath;
use crate::weights::Weights;

/// A dense layer `y = act(x · Wᵀ + b)` in one of the encoder's precisions.
pub(crate) trait Dense: Sized + Sync {
    /// What chooses the layer's arithmetic (its CPU kernel).
    type Kernel: Copy;

    /// Packs a row-major `[n, k]` weight and its `n` biases.
    fn pack(weight: &[f32], bias: &[f32], n: usize, k: usize, kernel: Self::Kernel) -> Self;

    /// `y = act(x · Wᵀ + b)` for the `rows` rows of `x` (`rows * k` floats); `y` gets
    /// `rows * n` floats.
    fn forward(&self, x: &[f32], rows: usize, y: &mut Vec<f32>, act: Option<HiddenAct>);
}

/// One text's token ids and token type ids (equal lengths).
pub(crate) struct Tokens<'a> {
    pub(crate) ids: &'a [u32],
    pub(crate) types: &'a [u32],
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

struct Layer<D> {
    /// Q, K and V stacked: `3 * hidden` outputs.
    qkv: D,
    attention_out: D,
    attention_norm: Norm,
    up: D,
    down: D,
    output_norm: Norm,
}

/// BERT with its dense layers of type `D` (f32 in `gemm.rs`, bf16 in `bf16.rs`).
pub(crate) struct Bert<D> {
    kernel_name: &'static str,
    /// Attention's products run on the f32 micro-kernel whatever `D` is.
    attention_kernel: gemm::Kernel,
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
    layers: Vec<Layer<D>>,
}

fn norm(w: &Weights<'_>, prefix: &str, hidden: usize) -> Result<Norm, String> {
    Ok(Norm {
        gamma: w.get(&format!("{prefix}.weight"), &[hidden])?,
        beta: w.get(&format!("{prefix}.bias"), &[hidden])?,
    })
}

fn linear<D: Dense>(
    w: &Weights<'_>,
    prefix: &str,
    n: usize,
    k: usize,
    kernel: D::Kernel,
) -> Result<D, String> {
    let weight = w.get(&format!("{prefix}.weight"), &[n, k])?;
    let bias = w.get(&format!("{prefix}.bias"), &[n])?;
    Ok(D::pack(&weight, &bias, n, k, kernel))
}

/// Rows per task of the row-wise steps (layer norms): fewer are not worth a thread.
const NORM_ROWS_PER_TASK: usize = 64;

impl<D: Dense> Bert<D> {
    /// Reads the weights under Hugging Face's `BertModel` names (see `weights.rs`) and
    /// packs the dense layers for `kernel`, which [`Bert::kernel_name`] will report as
    /// `kernel_name`.
    ///
    /// # Errors
    ///
    /// A message naming a tensor that is missing or does not fit the config.
    pub(crate) fn load(
        w: &Weights<'_>,
        config: &BertConfig,
        kernel: D::Kernel,
        kernel_name: &'static str,
    ) -> Result<Self, String> {
        let h = config.hidden_size;
        let word = w.get("embeddings.word_embeddings.weight", &[config.vocab_size, h])?;
        let position = w.get(
            "embeddings.position_embeddings.weight",
            &[config.max_position_embeddings, h],
        )?;
        let token_type = w.get(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, h],
        )?;
        let embedding_norm = norm(w, "embeddings.LayerNorm", h)?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let l = format!("encoder.layer.{i}");
            let mut qkv_w = Vec::with_capacity(3 * h * h);
            let mut qkv_b = Vec::with_capacity(3 * h);
            for part in ["query", "key", "value"] {
                let p = format!("{l}.attention.self.{part}");
                qkv_w.extend(w.get(&format!("{p}.weight"), &[h, h])?);
                qkv_b.extend(w.get(&format!("{p}.bias"), &[h])?);
            }
            let inter = config.intermediate_size;
            layers.push(Layer {
                qkv: D::pack(&qkv_w, &qkv_b, 3 * h, h, kernel),
                attention_out: linear(w, &format!("{l}.attention.output.dense"), h, h, kernel)?,
                attention_norm: norm(w, &format!("{l}.attention.output.LayerNorm"), h)?,
                up: linear(w, &format!("{l}.intermediate.dense"), inter, h, kernel)?,
                down: linear(w, &format!("{l}.output.dense"), h, inter, kernel)?,
                output_norm: norm(w, &format!("{l}.output.LayerNorm"), h)?,
            });
        }
        #[allow(clippy::cast_possible_truncation, reason = "epsilons are tiny")]
        let eps = config.layer_norm_eps as f32;
        Ok(Bert {
            kernel_name,
            attention_kernel: gemm::Kernel::native(),
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

    /// The dense layers' kernel: `"f32-avx2"`, `"bf16-avx512"`, ... (see
    /// [`crate::Embedder::kernel`]).
    pub(crate) fn kernel_name(&self) -> &'static str {
        self.kernel_name
    }

    /// `x = layer_norm(x + residual)` row by row, across threads when there are many rows.
    fn add_norm(&self, x: &mut [f32], residual: Option<&[f32]>, n: &Norm) {
        let h = self.hidden;
        let chunk = NORM_ROWS_PER_TASK * h;
        if x.len() <= chunk {
            vmath::add_layer_norm(x, residual, &n.gamma, &n.beta, self.eps);
            return;
        }
        match residual {
            Some(res) => x
                .par_chunks_mut(chunk)
                .zip(res.par_chunks(chunk))
                .for_each(|(x, r)| vmath::add_layer_norm(x, Some(r), &n.gamma, &n.beta, self.eps)),
            None => x
                .par_chunks_mut(chunk)
                .for_each(|x| vmath::add_layer_norm(x, None, &n.gamma, &n.beta, self.eps)),
        }
    }

    /// The last layer's token vectors of every text, stacked: `sum(len) * hidden` floats,
    /// text after text.
    pub(crate) fn forward(&self, texts: &[Tokens<'_>]) -> Result<Vec<f32>, String> {
        let h = self.hidden;
        let rows: usize = texts.iter().map(|t| t.ids.len()).sum();
        let mut x = vec![0f32; rows * h];
        let mut at = 0;
        for t in texts {
            if t.ids.len() != t.types.len() || t.ids.len() > self.max_positions {
                return Err(format!(
                    "a text of {} tokens ({} type ids) does not fit {} positions",
                    t.ids.len(),
                    t.types.len(),
                    self.max_positions
                ));
            }
            for (pos, (&id, &ty)) in t.ids.iter().zip(t.types).enumerate() {
                let (id, ty) = (id as usize, ty as usize);
                if id >= self.vocab || ty >= self.type_vocab {
                    return Err(format!(
                        "token id {id} / type {ty} outside the model's tables"
                    ));
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
        self.add_norm(&mut x, None, &self.embedding_norm);

        let spans: Vec<(usize, usize)> = texts
            .iter()
            .scan(0, |start, t| {
                let s = *start;
                *start += t.ids.len();
                Some((s, t.ids.len()))
            })
            .collect();
        let (mut qkv, mut by_head, mut context, mut tmp, mut up) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for layer in &self.layers {
            layer.qkv.forward(&x, rows, &mut qkv, None);
            self.attention(&qkv, &spans, rows, &mut by_head, &mut context);
            layer.attention_out.forward(&context, rows, &mut tmp, None);
            self.add_norm(&mut tmp, Some(&x), &layer.attention_norm);
            std::mem::swap(&mut x, &mut tmp);
            layer.up.forward(&x, rows, &mut up, Some(self.act));
            layer.down.forward(&up, rows, &mut tmp, None);
            self.add_norm(&mut tmp, Some(&x), &layer.output_norm);
            std::mem::swap(&mut x, &mut tmp);
        }
        Ok(x)
    }

    /// Self-attention of every text and head, from the stacked Q/K/V rows into `out`
    /// (`rows * hidden`, heads side by side as BERT concatenates them). Heads run in
    /// parallel, each over every text, into `by_head` (`heads * rows * dim`: each head's
    /// rows contiguous, so the heads' parts are disjoint slices), copied into place after.
    fn attention(
        &self,
        qkv: &[f32],
        spans: &[(usize, usize)],
        rows: usize,
        by_head: &mut Vec<f32>,
        out: &mut Vec<f32>,
    ) {
        let h = self.hidden;
        let dim = h / self.heads;
        let stride = 3 * h;
        resize(out, rows * h);
        if rows == 0 || dim == 0 {
            return;
        }
        resize(by_head, self.heads * rows * dim);
        by_head
            .par_chunks_mut(rows * dim)
            .enumerate()
            .for_each_init(attention::Scratch::default, |scratch, (head, o)| {
                for &(start, len) in spans {
                    let base = start * stride + head * dim;
                    attention::head(
                        self.attention_kernel,
                        &qkv[base..],
                        &qkv[base + h..],
                        &qkv[base + 2 * h..],
                        attention::HeadShape { stride, len, dim },
                        scratch,
                        &mut o[start * dim..(start + len) * dim],
                    );
                }
            });
        for (r, row) in out.chunks_exact_mut(h).enumerate() {
            for (head, part) in row.chunks_exact_mut(dim).enumerate() {
                let at = (head * rows + r) * dim;
                part.copy_from_slice(&by_head[at..at + dim]);
            }
        }
    }
}

/// `buffer` with `len` elements, zeroed only when its length changes: the layers
/// overwrite every element, and between layers the lengths repeat.
pub(crate) fn resize(buffer: &mut Vec<f32>, len: usize) {
    if buffer.len() != len {
        buffer.clear();
        buffer.resize(len, 0.0);
    }
}
