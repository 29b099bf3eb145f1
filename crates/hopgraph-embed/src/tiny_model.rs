//! A tiny random-weight BERT model directory, written on demand, for tests of the code
//! path (loading, tokenizing, batching, pooling, truncation) in this crate and in the
//! crates that use it (the MCP server and CLI tests), where no real model may be present.
//!
//! Its vectors are deterministic for a given seed but mean nothing: never use it to
//! judge similarity. It has a 32-wide hidden state, 2 layers, a WordPiece vocabulary of
//! single letters, digits, punctuation and a few words (so an English word becomes one
//! token per letter and long texts reach the window quickly), and writes the same files a
//! sentence-transformers directory has.

use std::collections::HashMap;
use std::path::Path;

use safetensors::Dtype;
use safetensors::tensor::TensorView;
use serde_json::json;

use crate::error::{EmbedError, Result};
use crate::spec::Pooling;

/// The shape and options of a tiny model directory. `TinyModel::default().write(dir)`
/// gives a mean-pooling model with a 64-token window.
#[derive(Clone, Debug)]
pub struct TinyModel {
    /// The pooling mode written to `1_Pooling/config.json`.
    pub pooling: Pooling,
    /// `max_position_embeddings` in `config.json`.
    pub max_position_embeddings: usize,
    /// `max_seq_length` in `sentence_bert_config.json`; `None` writes no such file.
    pub max_seq_length: Option<usize>,
    /// The vector length (`hidden_size`); a multiple of 4 (the head count).
    pub hidden_size: usize,
    /// Seeds the weights.
    pub seed: u64,
    /// `hidden_act` in `config.json`: `gelu`, `geluapproximate` or `relu`.
    pub hidden_act: &'static str,
}

impl Default for TinyModel {
    fn default() -> Self {
        TinyModel {
            pooling: Pooling::Mean,
            max_position_embeddings: 64,
            max_seq_length: None,
            hidden_size: 32,
            seed: 7,
            hidden_act: "gelu",
        }
    }
}

const HEADS: usize = 4;
const LAYERS: usize = 2;
const WORDS: [&str; 10] = [
    "the", "cat", "dog", "sat", "on", "mat", "hello", "world", "graph", "memory",
];

/// The tiny vocabulary, in id order: 5 special tokens, then letters, digits, punctuation,
/// their `##` continuations, and a few whole words.
pub fn vocabulary() -> Vec<String> {
    let mut vocab: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let pieces: Vec<char> = ('a'..='z')
        .chain('0'..='9')
        .chain(".,!?'\"-():;".chars())
        .collect();
    vocab.extend(pieces.iter().map(|c| c.to_string()));
    vocab.extend(pieces.iter().map(|c| format!("##{c}")));
    vocab.extend(WORDS.iter().map(|w| w.to_string()));
    vocab
}

impl TinyModel {
    /// Writes `config.json`, `tokenizer.json`, `model.safetensors`, `modules.json`,
    /// `1_Pooling/config.json` and (if `max_seq_length` is set)
    /// `sentence_bert_config.json` into `dir`, creating it.
    ///
    /// # Errors
    ///
    /// [`EmbedError::Io`] if a file cannot be written; [`EmbedError::InvalidFile`] if the
    /// weights cannot be serialized.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| EmbedError::Io { path, source }
        };
        let pool_dir = dir.join("1_Pooling");
        std::fs::create_dir_all(&pool_dir).map_err(io(&pool_dir))?;
        let write_json = |name: &str, value: serde_json::Value| -> Result<()> {
            let path = dir.join(name);
            std::fs::write(&path, value.to_string()).map_err(io(&path))
        };

        let vocab = vocabulary();
        let hidden = self.hidden_size;
        let intermediate = 2 * hidden;
        write_json(
            "config.json",
            json!({
                "architectures": ["BertModel"],
                "model_type": "bert",
                "vocab_size": vocab.len(),
                "hidden_size": hidden,
                "num_hidden_layers": LAYERS,
                "num_attention_heads": HEADS,
                "intermediate_size": intermediate,
                "hidden_act": self.hidden_act,
                "hidden_dropout_prob": 0.1,
                "attention_probs_dropout_prob": 0.1,
                "max_position_embeddings": self.max_position_embeddings,
                "type_vocab_size": 2,
                "initializer_range": 0.02,
                "layer_norm_eps": 1e-12,
                "pad_token_id": 0,
                "position_embedding_type": "absolute"
            }),
        )?;
        write_json(
            "modules.json",
            json!([
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
            ]),
        )?;
        write_json(
            "1_Pooling/config.json",
            json!({
                "word_embedding_dimension": hidden,
                "pooling_mode_cls_token": self.pooling == Pooling::Cls,
                "pooling_mode_mean_tokens": self.pooling == Pooling::Mean,
                "pooling_mode_max_tokens": self.pooling == Pooling::Max,
                "pooling_mode_mean_sqrt_len_tokens": self.pooling == Pooling::MeanSqrtLen
            }),
        )?;
        if let Some(max_seq_length) = self.max_seq_length {
            write_json(
                "sentence_bert_config.json",
                json!({"max_seq_length": max_seq_length, "do_lower_case": false}),
            )?;
        }
        write_json("tokenizer.json", tokenizer_json(&vocab))?;

        let path = dir.join("model.safetensors");
        let weights = self.weights(vocab.len());
        let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = weights
            .into_iter()
            .map(|(name, (shape, data))| {
                let bytes = data.iter().flat_map(|x| x.to_le_bytes()).collect();
                (name, shape, bytes)
            })
            .collect();
        let invalid = |e: safetensors::SafeTensorError| EmbedError::InvalidFile {
            path: path.clone(),
            reason: format!("cannot serialize the weights: {e}"),
        };
        let views = bytes
            .iter()
            .map(|(name, shape, data)| {
                TensorView::new(Dtype::F32, shape.clone(), data).map(|v| (name.as_str(), v))
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(invalid)?;
        let file = safetensors::serialize(views, None).map_err(invalid)?;
        std::fs::write(&path, file).map_err(io(&path))?;
        Ok(())
    }

    /// Every tensor by name: its shape and row-major values.
    fn weights(&self, vocab: usize) -> HashMap<String, (Vec<usize>, Vec<f32>)> {
        let h = self.hidden_size;
        let i = 2 * h;
        let mut rng = XorShift(self.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut w = HashMap::new();
        let mut add = |name: String, shape: &[usize], center: f32, spread: f32| {
            let n = shape.iter().product();
            let data: Vec<f32> = (0..n)
                .map(|_| center + spread * rng.next_signed())
                .collect();
            w.insert(name, (shape.to_vec(), data));
        };
        add(
            "embeddings.word_embeddings.weight".into(),
            &[vocab, h],
            0.0,
            1.0,
        );
        add(
            "embeddings.position_embeddings.weight".into(),
            &[self.max_position_embeddings, h],
            0.0,
            0.5,
        );
        add(
            "embeddings.token_type_embeddings.weight".into(),
            &[2, h],
            0.0,
            0.1,
        );
        add("embeddings.LayerNorm.weight".into(), &[h], 1.0, 0.1);
        add("embeddings.LayerNorm.bias".into(), &[h], 0.0, 0.1);
        for l in 0..LAYERS {
            let p = format!("encoder.layer.{l}");
            for m in ["query", "key", "value"] {
                add(format!("{p}.attention.self.{m}.weight"), &[h, h], 0.0, 0.3);
                add(format!("{p}.attention.self.{m}.bias"), &[h], 0.0, 0.1);
            }
            add(
                format!("{p}.attention.output.dense.weight"),
                &[h, h],
                0.0,
                0.3,
            );
            add(format!("{p}.attention.output.dense.bias"), &[h], 0.0, 0.1);
            add(
                format!("{p}.attention.output.LayerNorm.weight"),
                &[h],
                1.0,
                0.1,
            );
            add(
                format!("{p}.attention.output.LayerNorm.bias"),
                &[h],
                0.0,
                0.1,
            );
            add(format!("{p}.intermediate.dense.weight"), &[i, h], 0.0, 0.3);
            add(format!("{p}.intermediate.dense.bias"), &[i], 0.0, 0.1);
            add(format!("{p}.output.dense.weight"), &[h, i], 0.0, 0.3);
            add(format!("{p}.output.dense.bias"), &[h], 0.0, 0.1);
            add(format!("{p}.output.LayerNorm.weight"), &[h], 1.0, 0.1);
            add(format!("{p}.output.LayerNorm.bias"), &[h], 0.0, 0.1);
        }
        w
    }
}

/// A `tokenizer.json` as the tokenizers library writes it for a BERT WordPiece model.
fn tokenizer_json(vocab: &[String]) -> serde_json::Value {
    let ids: serde_json::Map<String, serde_json::Value> = vocab
        .iter()
        .enumerate()
        .map(|(id, token)| (token.clone(), json!(id)))
        .collect();
    let added: Vec<serde_json::Value> = vocab
        .iter()
        .take(5)
        .enumerate()
        .map(|(id, token)| {
            json!({"id": id, "content": token, "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": true,
                        "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                   "max_input_chars_per_word": 100, "vocab": ids}
    })
}

/// xorshift64*: a seeded generator, so a tiny model's weights are the same on every run.
struct XorShift(u64);

impl XorShift {
    /// Uniform in [-1, 1).
    fn next_signed(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let bits = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40; // 24 random bits
        (bits as f32 / (1u64 << 23) as f32) - 1.0
    }
}
