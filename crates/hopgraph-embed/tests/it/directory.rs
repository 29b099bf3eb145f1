//! Bad model directories: each gives a typed error that names the file at fault.

use std::path::Path;

use hopgraph_embed::tiny_model::TinyModel;
use hopgraph_embed::{EmbedError, Embedder, Precision};

fn model_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    TinyModel::default()
        .write(dir.path())
        .expect("write tiny model");
    dir
}

fn load_err(dir: &Path) -> EmbedError {
    match Embedder::load(dir) {
        Ok(e) => panic!("expected an error, loaded {e:?}"),
        Err(err) => err,
    }
}

#[test]
fn each_missing_file_is_named() {
    for file in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "1_Pooling/config.json",
    ] {
        let dir = model_dir();
        std::fs::remove_file(dir.path().join(file)).expect("remove");
        let err = load_err(dir.path());
        match &err {
            EmbedError::MissingFile { file: missing, .. } => assert_eq!(missing, Path::new(file)),
            other => panic!("{file}: expected MissingFile, got {other:?}"),
        }
        assert!(err.to_string().contains(file), "{err}");
    }
}

#[test]
fn a_directory_that_is_not_there() {
    let err = load_err(Path::new("/no/such/model/dir"));
    assert!(matches!(err, EmbedError::NoDirectory { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "model directory /no/such/model/dir does not exist"
    );
}

#[test]
fn unknown_model_type_is_refused() {
    let dir = model_dir();
    let path = dir.path().join("config.json");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replace("\"bert\"", "\"xlm-roberta\"")).expect("write");
    let err = load_err(dir.path());
    match &err {
        EmbedError::UnsupportedArchitecture {
            model_type,
            path: p,
        } => {
            assert_eq!(model_type, "xlm-roberta");
            assert_eq!(p, &path);
        }
        other => panic!("expected UnsupportedArchitecture, got {other:?}"),
    }
}

fn invalid_names(dir: &Path, file: &str) {
    let err = load_err(dir);
    match &err {
        EmbedError::InvalidFile { path, .. } => assert_eq!(path, &dir.join(file), "{err}"),
        other => panic!("{file}: expected InvalidFile, got {other:?}"),
    }
    assert!(err.to_string().contains(file), "{err}");
}

#[test]
fn garbage_files_are_named() {
    for file in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "1_Pooling/config.json",
        "modules.json",
    ] {
        let dir = model_dir();
        std::fs::write(dir.path().join(file), b"{ not what it should be").expect("write");
        invalid_names(dir.path(), file);
    }
}

#[test]
fn weights_of_another_shape_are_refused() {
    let dir = model_dir();
    let other = tempfile::tempdir().expect("temp dir");
    TinyModel {
        hidden_size: 16,
        ..TinyModel::default()
    }
    .write(other.path())
    .expect("write");
    std::fs::copy(
        other.path().join("model.safetensors"),
        dir.path().join("model.safetensors"),
    )
    .expect("copy");
    invalid_names(dir.path(), "model.safetensors");
    // Both encoders check the weights against the config, whichever precision loads them.
    for precision in [Precision::F32, Precision::Bf16] {
        match Embedder::load_with_precision(dir.path(), precision) {
            Err(EmbedError::InvalidFile { path, .. }) => {
                assert_eq!(path, dir.path().join("model.safetensors"));
            }
            other => panic!("{precision:?}: expected InvalidFile, got {other:?}"),
        }
    }
}

#[test]
fn truncated_weights_are_refused() {
    let dir = model_dir();
    let path = dir.path().join("model.safetensors");
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("write");
    invalid_names(dir.path(), "model.safetensors");
}

#[test]
fn a_dense_module_is_refused() {
    let dir = model_dir();
    std::fs::write(
        dir.path().join("modules.json"),
        r#"[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
            {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
            {"idx":2,"name":"2","path":"2_Dense","type":"sentence_transformers.models.Dense"}]"#,
    )
    .expect("write");
    let err = load_err(dir.path());
    assert!(matches!(err, EmbedError::Unsupported { .. }), "{err:?}");
    assert!(err.to_string().contains("Dense"), "{err}");
}

#[test]
fn modules_json_moves_the_pooling_folder() {
    let dir = model_dir();
    std::fs::rename(dir.path().join("1_Pooling"), dir.path().join("pool")).expect("rename");
    // Without modules.json pointing at it, the default folder is missing.
    let modules = std::fs::read_to_string(dir.path().join("modules.json")).expect("read");
    std::fs::remove_file(dir.path().join("modules.json")).expect("remove");
    assert!(matches!(
        load_err(dir.path()),
        EmbedError::MissingFile { .. }
    ));
    std::fs::write(
        dir.path().join("modules.json"),
        modules.replace("\"1_Pooling\"", "\"pool\""),
    )
    .expect("write");
    let e = Embedder::load(dir.path()).expect("load with moved pooling folder");
    assert_eq!(e.dimension(), 32);
}

#[test]
fn a_tokenizer_of_another_model_is_refused() {
    let dir = model_dir();
    let path = dir.path().join("config.json");
    let text = std::fs::read_to_string(&path).expect("read");
    let vocab = hopgraph_embed::tiny_model::vocabulary().len();
    std::fs::write(
        &path,
        text.replace(&format!("\"vocab_size\":{vocab}"), "\"vocab_size\":10"),
    )
    .expect("write");
    invalid_names(dir.path(), "tokenizer.json");
}

#[test]
fn degenerate_sizes_are_refused() {
    for (key, value) in [
        ("intermediate_size", 0),
        ("num_hidden_layers", 0),
        ("hidden_size", 0),
    ] {
        let dir = model_dir();
        let path = dir.path().join("config.json");
        let mut config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        config[key] = serde_json::json!(value);
        std::fs::write(&path, config.to_string()).expect("write");
        invalid_names(dir.path(), "config.json");
    }
}
