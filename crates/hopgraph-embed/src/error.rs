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

    /// A model directory named by the caller does not exist.
    #[error("model directory {dir} does not exist")]
    NoDirectory {
        /// The directory.
        dir: PathBuf,
    },

    /// A model id is not (wholly) in the Hugging Face cache and cannot be downloaded: the
    /// endpoint cannot be reached, or `HF_HUB_OFFLINE` is set.
    #[error(
        "model {model} is not in the Hugging Face cache ({cache}) and cannot be downloaded \
         from {endpoint}: {reason}. Provide it one of three ways: (1) a local model \
         directory instead of the id; (2) a pre-populated Hugging Face cache: run \
         `huggingface-cli download {model}` (or `hf download {model}`) where there is \
         network and copy the cache here, or point HF_HOME or HF_HUB_CACHE at one; (3) \
         network access to the Hub, or HF_ENDPOINT set to a reachable mirror"
    )]
    ModelUnavailable {
        /// The model id.
        model: String,
        /// The cache directory searched.
        cache: PathBuf,
        /// The endpoint tried.
        endpoint: String,
        /// Why it could not be used (the connection error, or offline mode).
        reason: String,
    },

    /// The endpoint answered, but not with the file: an HTTP error, a required file it does
    /// not have, or a download that ended early.
    #[error("downloading {file} of model {model}: {reason}")]
    Download {
        /// The model id.
        model: String,
        /// The file, relative to the model repository.
        file: String,
        /// What went wrong.
        reason: String,
    },

    /// A file of a pinned model (downloaded, or found in the cache) is not the pinned
    /// file: tampered with, truncated, or of another revision.
    #[error("model {model}: {file} ({location}) is not the pinned file: {reason}")]
    Checksum {
        /// The model id.
        model: String,
        /// The file, relative to the model repository.
        file: String,
        /// Where it is: its path in the cache, or the URL it came from.
        location: String,
        /// Which size or hash it has and which it should have.
        reason: String,
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

    /// The encoder could not run on a text: a token id outside the model's tables (a
    /// tokenizer that does not belong to the weights) or a text longer than its positions.
    #[error("running the encoder: {reason}")]
    Inference {
        /// What the encoder refused, in words.
        reason: String,
    },
}

/// The crate's result type.
pub type Result<T, E = EmbedError> = std::result::Result<T, E>;
