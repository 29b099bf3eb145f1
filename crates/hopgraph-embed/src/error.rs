//! The crate's one error type. Every loading error names the file it is about, so a user
//! with a half-copied model directory learns which file to fix.

use std::path::PathBuf;

/// What can go wrong loading a model directory or embedding text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A file the model directory must have is not there.
    #[error(
        "model directory {dir}: {file} is missing (a sentence-transformers model directory \
         holds config.json, tokenizer.json, model.safetensors and 1_Pooling/config.json; \
         see the hopgraph-embed README for how to get one)"
    )]
    MissingFile {
        /// The model directory.
        dir: PathBuf,
        /// The missing file, relative to `dir`.
        file: PathBuf,
    },

    /// A file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },

    /// A file was read but its content is not what a model directory holds.
    #[error("{path} is not valid: {reason}")]
    InvalidFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, in words.
        reason: String,
    },

    /// `config.json` names an encoder architecture this crate cannot run.
    #[error(
        "{path}: model_type {model_type:?} is not supported; hopgraph-embed runs BERT-family \
         encoders (model_type \"bert\": all-MiniLM-L6-v2, bge-small, e5-small, gte-small, ...)"
    )]
    UnsupportedArchitecture {
        /// The `config.json` file.
        path: PathBuf,
        /// The `model_type` it names.
        model_type: String,
    },

    /// The pooling configuration or a sentence-transformers module is one this crate does
    /// not implement (e.g. weighted-mean or last-token pooling, a `Dense` layer).
    #[error("{path}: {reason}")]
    Unsupported {
        /// The file that asks for it.
        path: PathBuf,
        /// What is asked for and what is supported.
        reason: String,
    },

    /// The tokenizer failed on an input text (it does not for valid UTF-8 with the
    /// tokenizers this crate loads; kept as an error rather than a panic).
    #[error("tokenizing text {index}: {reason}")]
    Tokenize {
        /// The index of the text in the batch handed to `embed`.
        index: usize,
        /// The tokenizer's message.
        reason: String,
    },

    /// The encoder failed while running (a tensor shape or allocation error).
    #[error("running the encoder: {0}")]
    Inference(#[from] candle_core::Error),
}

/// The crate's result type.
pub type Result<T, E = EmbedError> = std::result::Result<T, E>;
