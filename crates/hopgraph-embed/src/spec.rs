//! Reading a sentence-transformers model directory's small JSON files into a [`ModelSpec`]:
//! the encoder configuration, the pooling mode and the token window. No weights and no
//! tokenizer are loaded here, so this part is cheap to test on hand-written files.
//!
//! Files read (relative to the model directory):
//! - `config.json` (required): the Hugging Face encoder configuration; `model_type` must be
//!   `"bert"` (absent is taken as `"bert"` when `architectures` names a Bert class).
//! - `modules.json` (optional): the sentence-transformers pipeline. Only `Transformer`,
//!   `Pooling` and `Normalize` modules are accepted; a `Dense` or other module is refused,
//!   since skipping it would give wrong vectors. It also gives the pooling folder's name.
//! - `<pooling folder>/config.json` (required; `1_Pooling/config.json` unless
//!   `modules.json` says otherwise): which pooling mode is on.
//! - `sentence_bert_config.json` (optional): `max_seq_length`, the token window.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{EmbedError, Result};

/// How the token vectors of one text become one vector (sentence-transformers' `Pooling`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pooling {
    /// The mean of the token vectors under the attention mask (padding excluded).
    Mean,
    /// The first token's (`[CLS]`) vector.
    Cls,
    /// The element-wise maximum of the token vectors under the attention mask.
    Max,
    /// The masked sum divided by the square root of the token count.
    MeanSqrtLen,
}

impl Pooling {
    /// The name sentence-transformers' pooling config gives this mode.
    pub fn name(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
            Pooling::Max => "max",
            Pooling::MeanSqrtLen => "mean_sqrt_len",
        }
    }
}

/// The activation of BERT's feed-forward block, as `config.json`'s `hidden_act` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HiddenAct {
    /// `x * (1 + erf(x / sqrt 2)) / 2`.
    Gelu,
    /// GELU's tanh approximation.
    GeluApproximate,
    /// `max(x, 0)`.
    Relu,
}

/// How positions are encoded: only BERT's learned absolute position embeddings are run;
/// any other value of `position_embedding_type` is refused when `config.json` is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PositionEmbeddingType {
    /// A learned vector per position, added to the token's.
    #[default]
    Absolute,
}

/// The fields of a Hugging Face BERT `config.json` the encoder needs (others are
/// ignored).
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct BertConfig {
    pub(crate) vocab_size: usize,
    pub(crate) hidden_size: usize,
    pub(crate) num_hidden_layers: usize,
    pub(crate) num_attention_heads: usize,
    pub(crate) intermediate_size: usize,
    pub(crate) hidden_act: HiddenAct,
    pub(crate) max_position_embeddings: usize,
    pub(crate) type_vocab_size: usize,
    pub(crate) layer_norm_eps: f64,
    #[serde(default)]
    #[allow(dead_code, reason = "read to refuse what is not absolute")]
    pub(crate) position_embedding_type: PositionEmbeddingType,
    #[serde(default)]
    pub(crate) model_type: Option<String>,
}

/// Everything about a model directory except its weights and tokenizer.
#[derive(Clone, Debug)]
pub(crate) struct ModelSpec {
    pub(crate) config: BertConfig,
    pub(crate) pooling: Pooling,
    /// Tokens per text, `[CLS]` and `[SEP]` included: the smaller of `max_seq_length` and
    /// `max_position_embeddings`.
    pub(crate) window: usize,
    /// The raw bytes of the JSON files read, in a fixed order, for the model id's hash.
    pub(crate) config_bytes: Vec<u8>,
}

pub(crate) const CONFIG: &str = "config.json";
pub(crate) const TOKENIZER: &str = "tokenizer.json";
pub(crate) const WEIGHTS: &str = "model.safetensors";
const MODULES: &str = "modules.json";
const ST_CONFIG: &str = "sentence_bert_config.json";
const DEFAULT_POOLING_DIR: &str = "1_Pooling";

/// The path of `file` in `dir`, or [`EmbedError::MissingFile`] if it is not a file there.
pub(crate) fn required(dir: &Path, file: &str) -> Result<PathBuf> {
    let path = dir.join(file);
    if path.is_file() {
        Ok(path)
    } else {
        Err(EmbedError::MissingFile {
            dir: dir.to_path_buf(),
            file: PathBuf::from(file),
        })
    }
}

pub(crate) fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| EmbedError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn parse<T: for<'de> Deserialize<'de>>(path: &Path, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| EmbedError::InvalidFile {
        path: path.to_path_buf(),
        reason: format!("not the expected JSON: {e}"),
    })
}

#[derive(Deserialize)]
struct ModuleEntry {
    #[serde(default)]
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct StConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize, Default)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
    word_embedding_dimension: Option<usize>,
}

impl ModelSpec {
    /// Reads and checks the JSON files of the model directory `dir`.
    pub(crate) fn read(dir: &Path) -> Result<ModelSpec> {
        let mut config_bytes = Vec::new();

        let config_path = required(dir, CONFIG)?;
        let raw = read(&config_path)?;
        config_bytes.extend_from_slice(&raw);
        let value: serde_json::Value = parse(&config_path, &raw)?;
        check_architecture(&config_path, &value)?;
        let config: BertConfig = parse(&config_path, &raw)?;
        check_config(&config_path, &config)?;

        // modules.json: which folder holds the pooling config, and no module we would skip.
        let mut pooling_dir = DEFAULT_POOLING_DIR.to_string();
        let modules_path = dir.join(MODULES);
        if modules_path.is_file() {
            let raw = read(&modules_path)?;
            config_bytes.extend_from_slice(&raw);
            let modules: Vec<ModuleEntry> = parse(&modules_path, &raw)?;
            for module in &modules {
                let short = module.kind.rsplit('.').next().unwrap_or(&module.kind);
                match short {
                    "Transformer" | "Normalize" => {}
                    "Pooling" => pooling_dir = module.path.clone(),
                    other => {
                        return Err(EmbedError::Unsupported {
                            path: modules_path,
                            reason: format!(
                                "module {other:?} ({}) is not supported; hopgraph-embed runs \
                                 Transformer, Pooling and Normalize modules only",
                                module.kind
                            ),
                        });
                    }
                }
            }
        }

        let pooling_file = format!("{pooling_dir}/config.json");
        let pooling_path = required(dir, &pooling_file)?;
        let raw = read(&pooling_path)?;
        config_bytes.extend_from_slice(&raw);
        let pooling_config: PoolingConfig = parse(&pooling_path, &raw)?;
        let pooling = pooling_mode(&pooling_path, &pooling_config, config.hidden_size)?;

        let mut window = config.max_position_embeddings;
        let st_path = dir.join(ST_CONFIG);
        if st_path.is_file() {
            let raw = read(&st_path)?;
            config_bytes.extend_from_slice(&raw);
            let st: StConfig = parse(&st_path, &raw)?;
            if let Some(max_seq_length) = st.max_seq_length {
                if max_seq_length < 2 {
                    return Err(EmbedError::InvalidFile {
                        path: st_path,
                        reason: format!(
                            "max_seq_length {max_seq_length} leaves no room for a token \
                             between [CLS] and [SEP]"
                        ),
                    });
                }
                window = window.min(max_seq_length);
            }
        }

        Ok(ModelSpec {
            config,
            pooling,
            window,
            config_bytes,
        })
    }
}

fn check_architecture(path: &Path, value: &serde_json::Value) -> Result<()> {
    let model_type = match value.get("model_type").and_then(|v| v.as_str()) {
        Some(t) => t.to_string(),
        None => {
            let bert_class = value
                .get("architectures")
                .and_then(|a| a.as_array())
                .is_some_and(|a| {
                    a.iter()
                        .any(|c| c.as_str().is_some_and(|c| c.starts_with("Bert")))
                });
            if bert_class {
                return Ok(());
            }
            return Err(EmbedError::InvalidFile {
                path: path.to_path_buf(),
                reason: "no model_type (nor a Bert class in architectures)".to_string(),
            });
        }
    };
    if model_type == "bert" {
        Ok(())
    } else {
        Err(EmbedError::UnsupportedArchitecture {
            path: path.to_path_buf(),
            model_type,
        })
    }
}

fn check_config(path: &Path, config: &BertConfig) -> Result<()> {
    let invalid = |reason: String| EmbedError::InvalidFile {
        path: path.to_path_buf(),
        reason,
    };
    if config.hidden_size == 0 || config.num_attention_heads == 0 {
        return Err(invalid(
            "hidden_size and num_attention_heads must be > 0".into(),
        ));
    }
    if !config
        .hidden_size
        .is_multiple_of(config.num_attention_heads)
    {
        return Err(invalid(format!(
            "hidden_size {} is not a multiple of num_attention_heads {}",
            config.hidden_size, config.num_attention_heads
        )));
    }
    if config.max_position_embeddings < 2 {
        return Err(invalid(format!(
            "max_position_embeddings {} leaves no room for [CLS] and [SEP]",
            config.max_position_embeddings
        )));
    }
    if config.intermediate_size == 0 || config.num_hidden_layers == 0 {
        return Err(invalid(
            "intermediate_size and num_hidden_layers must be > 0".into(),
        ));
    }
    if config.type_vocab_size == 0 || config.vocab_size == 0 {
        return Err(invalid("vocab_size and type_vocab_size must be > 0".into()));
    }
    Ok(())
}

fn pooling_mode(path: &Path, c: &PoolingConfig, hidden_size: usize) -> Result<Pooling> {
    if let Some(dim) = c.word_embedding_dimension
        && dim != hidden_size
    {
        return Err(EmbedError::InvalidFile {
            path: path.to_path_buf(),
            reason: format!(
                "word_embedding_dimension {dim} differs from the encoder's hidden_size \
                 {hidden_size}"
            ),
        });
    }
    if c.pooling_mode_weightedmean_tokens || c.pooling_mode_lasttoken {
        return Err(EmbedError::Unsupported {
            path: path.to_path_buf(),
            reason: "weighted-mean and last-token pooling are not supported; supported: \
                     exactly one of mean, cls, max, mean_sqrt_len"
                .to_string(),
        });
    }
    let modes = [
        (c.pooling_mode_mean_tokens, Pooling::Mean),
        (c.pooling_mode_cls_token, Pooling::Cls),
        (c.pooling_mode_max_tokens, Pooling::Max),
        (c.pooling_mode_mean_sqrt_len_tokens, Pooling::MeanSqrtLen),
    ];
    let mut on = modes.iter().filter(|(on, _)| *on).map(|(_, mode)| *mode);
    match (on.next(), on.next()) {
        (Some(mode), None) => Ok(mode),
        (None, _) => Err(EmbedError::InvalidFile {
            path: path.to_path_buf(),
            reason: "no pooling mode is on; set exactly one of pooling_mode_mean_tokens, \
                     pooling_mode_cls_token, pooling_mode_max_tokens, \
                     pooling_mode_mean_sqrt_len_tokens"
                .to_string(),
        }),
        (Some(_), Some(_)) => Err(EmbedError::Unsupported {
            path: path.to_path_buf(),
            reason: "more than one pooling mode is on (sentence-transformers would \
                     concatenate them); supported: exactly one"
                .to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pooling(json: &str) -> Result<Pooling> {
        let c: PoolingConfig = serde_json::from_str(json).map_err(|e| EmbedError::InvalidFile {
            path: PathBuf::from("p"),
            reason: e.to_string(),
        })?;
        pooling_mode(Path::new("p"), &c, 8)
    }

    #[test]
    fn pooling_modes_parse() {
        assert_eq!(
            pooling(r#"{"pooling_mode_mean_tokens": true}"#).ok(),
            Some(Pooling::Mean)
        );
        assert_eq!(
            pooling(r#"{"pooling_mode_cls_token": true}"#).ok(),
            Some(Pooling::Cls)
        );
        assert_eq!(
            pooling(r#"{"pooling_mode_max_tokens": true}"#).ok(),
            Some(Pooling::Max)
        );
        assert_eq!(
            pooling(
                r#"{"pooling_mode_mean_sqrt_len_tokens": true, "word_embedding_dimension": 8}"#
            )
            .ok(),
            Some(Pooling::MeanSqrtLen)
        );
    }

    #[test]
    fn pooling_refusals() {
        assert!(matches!(pooling("{}"), Err(EmbedError::InvalidFile { .. })));
        assert!(matches!(
            pooling(r#"{"pooling_mode_mean_tokens": true, "pooling_mode_cls_token": true}"#),
            Err(EmbedError::Unsupported { .. })
        ));
        assert!(matches!(
            pooling(r#"{"pooling_mode_lasttoken": true}"#),
            Err(EmbedError::Unsupported { .. })
        ));
        assert!(matches!(
            pooling(r#"{"pooling_mode_mean_tokens": true, "word_embedding_dimension": 9}"#),
            Err(EmbedError::InvalidFile { .. })
        ));
    }

    #[test]
    fn architecture_check() {
        let p = Path::new("config.json");
        let ok = serde_json::json!({"model_type": "bert"});
        assert!(check_architecture(p, &ok).is_ok());
        let by_class = serde_json::json!({"architectures": ["BertModel"]});
        assert!(check_architecture(p, &by_class).is_ok());
        let other = serde_json::json!({"model_type": "xlm-roberta"});
        match check_architecture(p, &other) {
            Err(EmbedError::UnsupportedArchitecture { model_type, .. }) => {
                assert_eq!(model_type, "xlm-roberta")
            }
            r => panic!("expected UnsupportedArchitecture, got {r:?}"),
        }
        let none = serde_json::json!({});
        assert!(matches!(
            check_architecture(p, &none),
            Err(EmbedError::InvalidFile { .. })
        ));
    }
}
