//! In-process sentence embeddings for hopgraph: a BERT-family encoder loaded from a
//! sentence-transformers model directory, or by Hugging Face model id from the Hugging Face
//! cache or the Hub ([`hub`]), and run on the CPU, in Rust, with no Python. The network is
//! used only to download a model named by id that is not cached yet.
//!
//! An agent speaking to `hopgraph-mcp` cannot compute a 384-number vector itself; the
//! server embeds the text with a local model through this crate.
//!
//! # Quick start
//!
//! ```no_run
//! # fn main() -> Result<(), hopgraph_embed::EmbedError> {
//! use hopgraph_embed::Embedder;
//!
//! let embedder = Embedder::load("/path/to/all-MiniLM-L6-v2")?;
//! assert_eq!(embedder.dimension(), 384);
//! let vectors = embedder.embed(&["the cat sat on the mat", "a dog barked"])?;
//! let one = embedder.embed_one("hello world")?;
//! // Unit vectors: the dot product is the cosine similarity.
//! let cosine: f32 = vectors[0].iter().zip(&one).map(|(a, b)| a * b).sum();
//! println!("{} {cosine}", embedder.model_id());
//!
//! // By name: a directory, or a Hugging Face model id from the cache or the Hub.
//! let mut line = hopgraph_embed::hub::ProgressLine::stderr("example");
//! let (embedder, source) =
//!     Embedder::load_named("sentence-transformers/all-MiniLM-L6-v2", |p| line.update(p))?;
//! println!("{} from {}", embedder.model_id(), source.describe());
//! # Ok(()) }
//! ```
//!
//! # What a model directory holds
//!
//! The files sentence-transformers saves (`SentenceTransformer.save(dir)`, or any model
//! downloaded from the Hugging Face hub):
//! `config.json`, `tokenizer.json`, `model.safetensors`, `1_Pooling/config.json`, and
//! optionally `modules.json` and `sentence_bert_config.json`. A missing required file is
//! [`EmbedError::MissingFile`] naming it. The README says where to get one.
//!
//! # Supported architectures
//!
//! `model_type: "bert"` encoders with absolute position embeddings (Hugging Face's
//! `BertModel`, run by this crate's own forward pass; `hidden_act` `gelu`,
//! `geluapproximate` or `relu`): all-MiniLM-L6-v2 / L12 (384-d), BAAI bge-small / base
//! (384 / 768-d), intfloat e5-small / base, thenlper gte-small, and any other BERT
//! checkpoint with f32, f16 or bf16 weights. Any other `model_type` (xlm-roberta,
//! distilbert, nomic_bert, ...) is [`EmbedError::UnsupportedArchitecture`]. A `Dense` module in `modules.json` is refused
//! (skipping it would give wrong vectors).
//!
//! # Pooling
//!
//! As `1_Pooling/config.json` says, exactly one of: `mean` (average of the token vectors
//! under the attention mask, padding excluded: all-MiniLM, e5, gte), `cls` (the `[CLS]`
//! token's vector: bge), `max` (element-wise maximum under the mask), `mean_sqrt_len`
//! (masked sum / sqrt(token count)). Weighted-mean, last-token and several modes at once
//! are refused. Every output vector is then L2-normalised (a Normalize module or not), so
//! the dot product of two outputs is their cosine similarity.
//!
//! # Truncation
//!
//! A text is cut to the model's window: `min(max_seq_length, max_position_embeddings)`
//! tokens including `[CLS]` and `[SEP]` (256 for all-MiniLM-L6-v2, 512 for bge/e5), which
//! is what sentence-transformers does; only the start of a longer text counts. Before
//! tokenizing, a text is also cut at a character boundary at
//! [`TEXT_BYTES_PER_TOKEN_MAX`] bytes per window token (16 KiB for a 256-token window), so a
//! huge input costs bounded work; a text that long already fills the window with ordinary
//! words. [`Embedder::token_count`] tells a caller whether a text was cut. Texts are never
//! chunked and averaged: the vector of a long text is the vector of its beginning.
//!
//! # Speed and precision
//!
//! [`Embedder::embed`] tokenizes all texts in parallel, sorts them by token count, and runs
//! the encoder on batches of [`Embedder::batch_size`] texts.
//!
//! The encoder is the crate's own BERT forward pass (`bert.rs`): a batch's texts are
//! stacked as rows without padding, the dense layers run over all rows at once, attention
//! runs per text and head, and everything but the dense products (embeddings, layer
//! norms, softmax, attention's products, GELU with a vectorised erf; `vmath.rs`) is f32 in
//! loops compiled for the baseline CPU, AVX2 + FMA and AVX-512, chosen at run time. Which
//! dense layers run is the [`Precision`] (`HOPGRAPH_EMBED_PRECISION`, default `auto`):
//!
//! - **f32** (`gemm.rs`; everywhere by default except below): weights packed once at load
//!   into 16-column panels, a 6 x 16 register-blocked micro-kernel with AVX2 + FMA
//!   intrinsics where the CPU has them (`"f32-avx2"`), otherwise plain Rust the compiler
//!   vectorises (`"f32-neon"` on aarch64, `"f32-portable"` elsewhere), cache-blocked
//!   output tiles spread over the rayon pool. Vectors within cosine 0.99999 of
//!   sentence-transformers' (float summation order is the only difference).
//! - **bf16** (`bf16.rs`; the default on a CPU with AVX-512 BF16: AMD Zen 4 and later,
//!   Intel Sapphire Rapids and later): the dense layers on bf16 inputs with f32 sums
//!   (`VDPBF16PS`, twice the multiply-adds of an f32 FMA per instruction, `"bf16-avx512"`);
//!   ~3x faster than f32 for one short text there, vectors within cosine 0.9999 of
//!   sentence-transformers'. Asked for on another CPU, the same arithmetic runs in slow
//!   scalar code (`"bf16-emulated"`, for tests).
//!
//! [`Embedder::kernel`] says which one a loaded model uses. A text's vector does not
//! depend on the batch it is in: every output of a dense layer is summed in the same order
//! whatever the other rows.
//!
//! # Dependencies
//!
//! - `safetensors` (Hugging Face, the format's reference crate; serde + serde_json) reads
//!   `model.safetensors`.
//! - `unicode_categories` and `unicode-normalization-alignments`: the Unicode tables
//!   (general categories; NFD) that Hugging Face's tokenizers library uses, so the crate's
//!   own BERT WordPiece tokenizer (`wordpiece.rs`, ~300 lines) gives that library's ids.
//!   The `tokenizers` crate did this until 2026-11; it was a fifth of the Python package's
//!   build (with `regex`, `fancy-regex` and a dozen crates for tokenizers this crate never
//!   reads).
//! - `rayon` for the parallel tokenization and the encoder's threads; `crc32fast`
//!   (already in the workspace) for the model fingerprint.
//! - `sha2` (already in the workspace) for [`hub`]'s pinned hashes, and, with the
//!   `download` feature (default), `ureq` (rustls, webpki roots; `ring` builds a little
//!   C/assembly) for its downloads ([`transport::UreqTransport`]). `hf-hub` was not used:
//!   it does not check files against pinned hashes, which this crate needs. Without the
//!   feature a host supplies the HTTP client ([`transport::set_default_transport`]): the
//!   Python package does, with Python's `urllib`, and so builds no TLS stack of its own
//!   (0.89x the wheel's cold build, 107 against 120 s on 2 cores).
//!
//! No tensor library: the forward pass is ~1,500 lines without tests (`bert.rs`,
//! `gemm.rs`, `attention.rs`, `bf16.rs`, `vmath.rs`), tested against a plain f64 BERT and
//! against sentence-transformers' vectors.
//! candle (`candle-core`, `-nn`, `-transformers`) ran the f32 encoder until 2026-11; it
//! compiled ~100 model files for the one used and was slower than this pass.

#![deny(unsafe_code)]

mod attention;
mod bert;
#[allow(
    unsafe_code,
    reason = "AVX-512 BF16 intrinsics; every block has a SAFETY comment"
)]
mod bf16;
mod error;
#[allow(
    unsafe_code,
    reason = "AVX2/FMA intrinsics and disjoint output tiles; every block has a SAFETY comment"
)]
mod gemm;
pub mod hub;
mod pool;
mod spec;
pub mod tiny_model;
pub mod transport;
#[allow(
    unsafe_code,
    reason = "calls the AVX2 and AVX-512 copies of its functions after checking the CPU"
)]
mod vmath;
mod weights;
mod wordpiece;

use std::path::Path;

use rayon::prelude::*;

pub use error::{EmbedError, Result};
pub use hub::{Progress, ResolvedModel, resolve_model};
pub use spec::Pooling;

/// Texts per encoder run by default: sentence-transformers' default too, which keeps the
/// benchmark comparison like for like. Other sizes were not measured.
pub const BATCH_SIZE_DEFAULT: usize = 32;

/// The largest batch size [`Embedder::with_batch_size`] accepts: the attention scores of a
/// batch take `batch * heads * window^2 * 4` bytes (512 * 12 * 512^2 * 4 = 6 GiB at 512),
/// so larger batches risk memory for no speed.
pub const BATCH_SIZE_MAX: usize = 256;

/// Bytes of text kept per token of the window before tokenizing (see Truncation).
pub const TEXT_BYTES_PER_TOKEN_MAX: usize = 64;

/// How the encoder's dense products are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Precision {
    /// bf16 when the CPU has AVX-512 BF16, else f32: the default.
    Auto,
    /// f32 throughout (hopgraph's own forward pass with f32 dense layers, `gemm.rs`): the
    /// vectors sentence-transformers computes, to ~1e-6.
    F32,
    /// Dense products on bf16 inputs summed in f32 (`bf16.rs`):
    /// ~3x faster for one short text where the CPU has AVX-512 BF16, cosine ≥ 0.9999 to the
    /// f32 vectors. On a CPU without it the same arithmetic runs in slow scalar code (meant for
    /// tests).
    Bf16,
}

impl Precision {
    /// `HOPGRAPH_EMBED_PRECISION` (`auto`, `f32` or `bf16`; unset means auto).
    ///
    /// # Errors
    ///
    /// [`EmbedError::Unsupported`] for any other value.
    pub fn from_env() -> Result<Precision> {
        match std::env::var("HOPGRAPH_EMBED_PRECISION").as_deref() {
            Err(_) | Ok("" | "auto") => Ok(Precision::Auto),
            Ok("f32") => Ok(Precision::F32),
            Ok("bf16") => Ok(Precision::Bf16),
            Ok(other) => Err(EmbedError::Unsupported {
                path: "HOPGRAPH_EMBED_PRECISION".into(),
                reason: format!("{other:?} is not a precision: use auto, f32 or bf16"),
            }),
        }
    }
}

/// The network that computes token vectors: the same forward pass with f32 or bf16 dense
/// layers.
enum Encoder {
    F32(Box<bert::Bert<gemm::Linear>>),
    Bf16(Box<bert::Bert<bf16::Bf16Dense>>),
}

/// A loaded sentence-embedding model. `Send + Sync`: share one behind an `Arc`; `embed`
/// takes `&self`.
pub struct Embedder {
    encoder: Encoder,
    tokenizer: wordpiece::WordPiece,
    pooling: Pooling,
    window: usize,
    hidden: usize,
    batch_size: usize,
    model_id: String,
    fingerprint: String,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("model_id", &self.model_id)
            .field("dimension", &self.hidden)
            .field("pooling", &self.pooling)
            .field("max_tokens", &self.window)
            .field("batch_size", &self.batch_size)
            .field("kernel", &self.kernel())
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads the sentence-transformers model directory `dir` (see the crate docs for its
    /// files). Reads the weights into memory (about 90 MB for all-MiniLM-L6-v2) and
    /// checksums them for [`Embedder::model_id`]; takes ~0.1-0.3 s.
    ///
    /// # Errors
    ///
    /// [`EmbedError::NoDirectory`] when `dir` does not exist, [`EmbedError::MissingFile`]
    /// naming a missing file, [`EmbedError::Io`] for an unreadable one, [`EmbedError::InvalidFile`] for bad JSON, a bad tokenizer, or weights
    /// that do not fit the config, [`EmbedError::UnsupportedArchitecture`] for a
    /// `model_type` other than bert, [`EmbedError::Unsupported`] for a pooling mode or
    /// module this crate does not run.
    pub fn load(dir: impl AsRef<Path>) -> Result<Embedder> {
        Embedder::load_with_precision(dir, Precision::from_env()?)
    }

    /// As [`Embedder::load`], with the dense products' precision chosen by the caller
    /// instead of `HOPGRAPH_EMBED_PRECISION`.
    ///
    /// # Errors
    ///
    /// As [`Embedder::load`].
    pub fn load_with_precision(dir: impl AsRef<Path>, precision: Precision) -> Result<Embedder> {
        Embedder::load_dir(dir.as_ref(), precision, None)
    }

    /// Loads a model named by a directory or a Hugging Face model id such as
    /// `sentence-transformers/all-MiniLM-L6-v2`, found in the Hugging Face cache or
    /// downloaded into it (see [`hub`]), calling `progress` while downloading (e.g.
    /// [`hub::ProgressLine::update`]). The precision is `HOPGRAPH_EMBED_PRECISION`'s.
    /// Returns the model and where it came from.
    ///
    /// # Errors
    ///
    /// As [`hub::Hub::resolve`], then as [`Embedder::load`].
    pub fn load_named(
        spec: impl AsRef<std::ffi::OsStr>,
        progress: impl FnMut(&Progress<'_>),
    ) -> Result<(Embedder, ResolvedModel)> {
        let precision = Precision::from_env()?;
        let model = resolve_model(spec, progress)?;
        let embedder = Embedder::load_resolved(&model, precision)?;
        Ok((embedder, model))
    }

    /// Loads a model [`hub::Hub::resolve`] found. For a model id, [`Embedder::model_id`]
    /// starts with the id's last part (`all-MiniLM-L6-v2:<fingerprint>`, as for a directory
    /// of that name), not with the snapshot folder's commit hash.
    ///
    /// # Errors
    ///
    /// As [`Embedder::load`].
    pub fn load_resolved(model: &ResolvedModel, precision: Precision) -> Result<Embedder> {
        Embedder::load_dir(&model.dir, precision, model.name())
    }

    fn load_dir(dir: &Path, precision: Precision, name: Option<&str>) -> Result<Embedder> {
        if !dir.exists() {
            return Err(EmbedError::NoDirectory {
                dir: dir.to_path_buf(),
            });
        }
        if !dir.is_dir() {
            return Err(EmbedError::InvalidFile {
                path: dir.to_path_buf(),
                reason: "a model is a directory, and this is a file".into(),
            });
        }
        let spec = spec::ModelSpec::read(dir)?;
        let tokenizer_path = spec::required(dir, spec::TOKENIZER)?;
        let weights_path = spec::required(dir, spec::WEIGHTS)?;

        let tokenizer_bytes = spec::read(&tokenizer_path)?;
        let tokenizer = wordpiece::WordPiece::from_json(&tokenizer_bytes).map_err(|reason| {
            EmbedError::InvalidFile {
                path: tokenizer_path.clone(),
                reason,
            }
        })?;
        let vocab = tokenizer.vocab_size();
        if vocab > spec.config.vocab_size {
            return Err(EmbedError::InvalidFile {
                path: tokenizer_path,
                reason: format!(
                    "its vocabulary has {vocab} tokens but config.json's vocab_size is {}: \
                     the tokenizer belongs to another model",
                    spec.config.vocab_size
                ),
            });
        }

        let weights = spec::read(&weights_path)?;
        let weights_crc = crc32fast::hash(&weights);
        let invalid_weights = |reason: String| EmbedError::InvalidFile {
            path: weights_path.clone(),
            reason: format!("cannot load the encoder's weights: {reason}"),
        };
        let tensors = weights::Weights::parse(&weights, spec.config.model_type.as_deref())
            .map_err(invalid_weights)?;
        let bf16_kernel = match precision {
            Precision::F32 => None,
            Precision::Auto => bf16::Kernel::native(),
            Precision::Bf16 => Some(bf16::Kernel::native().unwrap_or(bf16::Kernel::Emulated)),
        };
        let encoder = match bf16_kernel {
            Some(kernel) => Encoder::Bf16(Box::new(
                bert::Bert::load(&tensors, &spec.config, kernel, kernel.name())
                    .map_err(invalid_weights)?,
            )),
            None => {
                let kernel = gemm::Kernel::native();
                Encoder::F32(Box::new(
                    bert::Bert::load(&tensors, &spec.config, kernel, kernel.name())
                        .map_err(invalid_weights)?,
                ))
            }
        };
        drop(tensors);
        drop(weights);

        let mut rest = crc32fast::Hasher::new();
        rest.update(&spec.config_bytes);
        rest.update(&tokenizer_bytes);
        let fingerprint = format!("{weights_crc:08x}{:08x}", rest.finalize());
        let name = model_name(dir, name);
        Ok(Embedder {
            encoder,
            tokenizer,
            pooling: spec.pooling,
            window: spec.window,
            hidden: spec.config.hidden_size,
            batch_size: BATCH_SIZE_DEFAULT,
            model_id: format!("{name}:{fingerprint}"),
            fingerprint,
        })
    }

    /// Sets the number of texts per encoder run, clamped to `1..=BATCH_SIZE_MAX`.
    #[must_use]
    pub fn with_batch_size(mut self, batch_size: usize) -> Embedder {
        self.batch_size = batch_size.clamp(1, BATCH_SIZE_MAX);
        self
    }

    /// The number of texts per encoder run.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The length of every vector this model produces (384 for all-MiniLM-L6-v2).
    pub fn dimension(&self) -> usize {
        self.hidden
    }

    /// A stable name for the model to record next to stored vectors:
    /// `<directory name>:<fingerprint>`, e.g. `all-MiniLM-L6-v2:3a7c09d1b2e4f580`. Two
    /// directories with the same files have the same fingerprint; compare
    /// [`Embedder::fingerprint`] to tell whether vectors are comparable, since the
    /// directory name may differ.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// 16 hex digits: the CRC-32 of `model.safetensors` then the CRC-32 of the JSON
    /// files and `tokenizer.json`. It changes when the weights, tokenizer, pooling or
    /// window change, i.e. whenever the vectors would.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Which dense-layer kernel the encoder runs: `"f32-avx2"` (f32 with AVX2 + FMA),
    /// `"f32-neon"` (f32 on aarch64), `"f32-portable"` (f32 on other CPUs),
    /// `"bf16-avx512"` (bf16 products on AVX-512 BF16) or `"bf16-emulated"` (the same
    /// arithmetic in scalar code). The f32 names all start with `f32`, the bf16 ones with
    /// `bf16`. See [`Precision`].
    pub fn kernel(&self) -> &'static str {
        match &self.encoder {
            Encoder::F32(b) => b.kernel_name(),
            Encoder::Bf16(b) => b.kernel_name(),
        }
    }

    /// The pooling mode the model directory asks for.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// The token window: a text is truncated to this many tokens, `[CLS]` and `[SEP]`
    /// included.
    pub fn max_tokens(&self) -> usize {
        self.window
    }

    /// How many tokens `text` has before truncation, `[CLS]` and `[SEP]` included (after
    /// the byte cut of [`TEXT_BYTES_PER_TOKEN_MAX`]). Greater than
    /// [`Embedder::max_tokens`] means only the text's start is embedded.
    ///
    /// # Errors
    ///
    /// None with the BERT WordPiece tokenizer this crate reads (every text has tokens);
    /// the `Result` leaves room for tokenizers that can refuse a text.
    pub fn token_count(&self, text: &str) -> Result<usize> {
        Ok(self.tokenizer.encode(cut(text, self.window), None).len())
    }

    /// The token ids the encoder sees for `text`: `[CLS]`, the text's WordPiece tokens cut
    /// to the window, `[SEP]` (the ids Hugging Face's tokenizers gives for the model's
    /// `tokenizer.json` with truncation to [`Embedder::max_tokens`]).
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        self.tokenizer
            .encode(cut(text, self.window), Some(self.window))
    }

    /// Embeds one text: a unit vector of [`Embedder::dimension`] floats.
    ///
    /// # Errors
    ///
    /// As [`Embedder::embed`].
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>> {
        let mut out = self.embed(&[text])?;
        // `embed` returns one vector per input text; there was one.
        out.pop().ok_or_else(|| EmbedError::Inference {
            reason: "no vector for one text".into(),
        })
    }

    /// Embeds `texts`: one unit vector per text, in the order given. The same text gives
    /// the same vector (up to float rounding, ~1e-6) whatever batch it is in.
    ///
    /// # Errors
    ///
    /// [`EmbedError::Inference`] if the encoder fails (e.g. out of memory).
    pub fn embed<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Vec<Vec<f32>>> {
        self.embed_with_progress(texts, |_, _| {})
    }

    /// As [`Embedder::embed`], calling `progress(done, total)` after each batch, for long
    /// jobs such as re-embedding a whole store. `done` counts texts and reaches `total`.
    ///
    /// # Errors
    ///
    /// As [`Embedder::embed`].
    pub fn embed_with_progress<S, F>(&self, texts: &[S], mut progress: F) -> Result<Vec<Vec<f32>>>
    where
        S: AsRef<str> + Sync,
        F: FnMut(usize, usize),
    {
        let encodings = self.tokenize(texts);
        // Shortest first: similar lengths together give attention even work per text and
        // keep the order of work independent of the caller's order.
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());

        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        let mut done = 0;
        for chunk in order.chunks(self.batch_size) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| encodings[i].as_slice()).collect();
            let vectors = self.run_batch(&batch)?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
            done += chunk.len();
            progress(done, texts.len());
        }
        Ok(out)
    }

    /// Each text's token ids, cut to the model's window.
    fn tokenize<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Vec<Vec<u32>> {
        texts
            .par_iter()
            .map(|text| self.token_ids(text.as_ref()))
            .collect()
    }

    /// Runs the encoder on one batch (its texts stacked without padding) and pools each
    /// text's token vectors.
    fn run_batch(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        // A single text's token type ids are all 0 (BERT's "sentence A").
        let longest = batch.iter().map(|ids| ids.len()).max().unwrap_or(0);
        let zeros = vec![0u32; longest];
        let texts: Vec<bert::Tokens<'_>> = batch
            .iter()
            .map(|ids| bert::Tokens {
                ids,
                types: &zeros[..ids.len()],
            })
            .collect();
        // On a thread of the rayon pool: the forward pass's parallel steps (a few per
        // layer) then start from a worker, which works on them itself, instead of each
        // waking the pool and putting the caller to sleep.
        let states = rayon::scope(|_| match &self.encoder {
            Encoder::F32(model) => model.forward(&texts),
            Encoder::Bf16(model) => model.forward(&texts),
        })
        .map_err(|reason| EmbedError::Inference { reason })?;
        let mut at = 0;
        Ok(batch
            .iter()
            .map(|e| {
                let len = e.len();
                if len == 0 {
                    return vec![0.0; self.hidden];
                }
                let rows = &states[at * self.hidden..(at + len) * self.hidden];
                at += len;
                self.pooled(rows, len)
            })
            .collect())
    }

    /// One text's vector from its `len` token vectors: pooled as the model says, then
    /// L2-normalised.
    fn pooled(&self, tokens: &[f32], len: usize) -> Vec<f32> {
        let mut v = pool::pool(self.pooling, tokens, self.hidden, len);
        pool::normalize(&mut v);
        v
    }
}

/// The text's first `TEXT_BYTES_PER_TOKEN_MAX * window` bytes, cut at a char boundary.
fn cut(text: &str, window: usize) -> &str {
    let max = TEXT_BYTES_PER_TOKEN_MAX.saturating_mul(window);
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `name`, else the model directory's last component, with anything but `[A-Za-z0-9._-]`
/// replaced by `_`, or `model` when the path has none.
fn model_name(dir: &Path, name: Option<&str>) -> String {
    let name = name
        .map(str::to_owned)
        .or_else(|| {
            dir.canonicalize()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        })
        .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "model".to_string()
    } else {
        name
    }
}

// The MCP server shares one Embedder across tasks.
const _: fn() = || {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Embedder>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_respects_char_boundaries() {
        let text = "é".repeat(100); // 200 bytes
        let c = cut(&text, 1); // 64 bytes max
        assert_eq!(c.len(), 64);
        let shifted = format!("a{text}");
        let c = cut(&shifted, 1); // boundary at 64 is mid-char: back to 63
        assert_eq!(c.len(), 63);
        assert_eq!(cut("short", 1), "short");
    }

    #[test]
    fn model_name_sanitised() {
        assert_eq!(
            model_name(Path::new("/no/such/all-MiniLM-L6-v2"), None),
            "all-MiniLM-L6-v2"
        );
        assert_eq!(model_name(Path::new("/no/such/a b:c"), None), "a_b_c");
        assert_eq!(model_name(Path::new("/"), None), "model");
        assert_eq!(
            model_name(
                Path::new("/cache/snapshots/0123abcd"),
                Some("all-MiniLM-L6-v2")
            ),
            "all-MiniLM-L6-v2"
        );
    }
}
