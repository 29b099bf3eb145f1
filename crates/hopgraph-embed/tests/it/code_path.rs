//! The embedding code path on tiny random-weight models: shapes, unit norms, pooling
//! modes, padding and batching invariance, truncation, odd inputs, progress.

use hopgraph_embed::tiny_model::TinyModel;
use hopgraph_embed::{Embedder, Pooling, Precision};
use tempfile::TempDir;

pub(crate) fn tiny(model: TinyModel) -> (TempDir, Embedder) {
    let dir = tempfile::tempdir().expect("temp dir");
    model.write(dir.path()).expect("write tiny model");
    let embedder = Embedder::load(dir.path()).expect("load tiny model");
    (dir, embedder)
}

fn with_pooling(pooling: Pooling) -> TinyModel {
    TinyModel {
        pooling,
        ..TinyModel::default()
    }
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

const TEXTS: [&str; 6] = [
    "the cat sat on the mat",
    "hello world",
    "a graph memory of 42 things, linked!",
    "x",
    "the dog",
    "quick brown foxes jump over lazy dogs again and again and again",
];

#[test]
fn shapes_and_unit_norms() {
    let (_dir, e) = tiny(TinyModel::default());
    assert_eq!(e.dimension(), 32);
    assert_eq!(e.pooling(), Pooling::Mean);
    assert_eq!(e.max_tokens(), 64);
    let vectors = e.embed(&TEXTS).expect("embed");
    assert_eq!(vectors.len(), TEXTS.len());
    for v in &vectors {
        assert_eq!(v.len(), 32);
        assert!((norm(v) - 1.0).abs() < 1e-5, "norm {}", norm(v));
        assert!(v.iter().all(|x| x.is_finite()));
    }
    // Different texts, different vectors.
    assert!(max_diff(&vectors[0], &vectors[1]) > 1e-3);
    assert!(e.embed(&[] as &[&str]).expect("embed nothing").is_empty());
}

#[test]
fn batch_results_equal_single_results_for_every_pooling() {
    for pooling in [
        Pooling::Mean,
        Pooling::Cls,
        Pooling::Max,
        Pooling::MeanSqrtLen,
    ] {
        let (_dir, e) = tiny(with_pooling(pooling));
        let batch = e.embed(&TEXTS).expect("embed batch");
        for (text, v) in TEXTS.iter().zip(&batch) {
            let single = e.embed_one(text).expect("embed one");
            // Padding to the batch's longest text and the attention mask must not change a
            // text's vector beyond float rounding.
            let d = max_diff(v, &single);
            assert!(
                d < 1e-5,
                "{pooling:?} {text:?}: batch vs single differ by {d}"
            );
        }
        // Other batch sizes (several batches, length-sorted) give the same answers.
        let e = e.with_batch_size(2);
        let small = e.embed(&TEXTS).expect("embed in batches of 2");
        for (a, b) in batch.iter().zip(&small) {
            assert!(max_diff(a, b) < 1e-5);
        }
    }
}

#[test]
fn pooling_modes_differ_as_they_should() {
    let (_d1, mean) = tiny(with_pooling(Pooling::Mean));
    let (_d2, sqrt) = tiny(with_pooling(Pooling::MeanSqrtLen));
    let (_d3, cls) = tiny(with_pooling(Pooling::Cls));
    let (_d4, max) = tiny(with_pooling(Pooling::Max));
    let text = ["the cat sat on the mat"];
    let m = &mean.embed(&text).expect("mean")[0];
    // mean and mean/sqrt(len) differ by a positive factor, which normalisation removes.
    assert!(max_diff(m, &sqrt.embed(&text).expect("sqrt")[0]) < 1e-5);
    assert!(max_diff(m, &cls.embed(&text).expect("cls")[0]) > 1e-3);
    assert!(max_diff(m, &max.embed(&text).expect("max")[0]) > 1e-3);
    // Same weights (same seed), so the fingerprints differ only through the pooling file.
    assert_ne!(mean.fingerprint(), cls.fingerprint());
}

#[test]
fn long_text_is_truncated_to_the_window() {
    let (_dir, e) = tiny(TinyModel::default()); // 64-token window
    // One token per single-letter word.
    let words: Vec<String> = (0..300)
        .map(|i| ((b'a' + (i % 26) as u8) as char).to_string())
        .collect();
    let long = words.join(" ");
    assert_eq!(e.token_count(&long).expect("count"), 302);
    let head = words[..62].join(" "); // 62 words + [CLS] + [SEP] = 64 tokens
    assert_eq!(e.token_count(&head).expect("count"), 64);
    let v_long = e.embed_one(&long).expect("embed long");
    let v_head = e.embed_one(&head).expect("embed head");
    assert!(
        max_diff(&v_long, &v_head) < 1e-6,
        "truncation keeps the first 62 words"
    );
    let v_shorter = e.embed_one(&words[..61].join(" ")).expect("embed shorter");
    assert!(max_diff(&v_long, &v_shorter) > 1e-4, "the 62nd word counts");
}

#[test]
fn max_seq_length_narrows_the_window() {
    let (_dir, e) = tiny(TinyModel {
        max_seq_length: Some(16),
        ..TinyModel::default()
    });
    assert_eq!(e.max_tokens(), 16);
    let words: Vec<String> = (b'a'..=b'z')
        .chain(b'a'..=b'n')
        .map(|c| (c as char).to_string())
        .collect();
    let a = e.embed_one(&words.join(" ")).expect("embed");
    let b = e.embed_one(&words[..14].join(" ")).expect("embed");
    assert!(max_diff(&a, &b) < 1e-6);
}

#[test]
fn huge_and_odd_inputs_do_not_fail() {
    let (_dir, e) = tiny(TinyModel::default());
    let huge = "memory graph ".repeat(100_000); // 1.3 MB
    let odd = [
        "",
        "   \n\t ",
        "🦀🚀 emoji only ✨",
        "日本語のテキストと中文",
        "fn main() { println!(\"{}\", 1 + 2); }",
        "\u{0}\u{1}control\u{7f}",
        huge.as_str(),
    ];
    let vectors = e.embed(&odd).expect("embed odd inputs");
    for v in &vectors {
        assert_eq!(v.len(), 32);
        assert!((norm(v) - 1.0).abs() < 1e-5);
    }
    // The byte cut happens before tokenizing: bounded work, still a full window.
    assert!(e.token_count(&huge).expect("count") > e.max_tokens());
}

#[test]
fn progress_reports_every_batch() {
    let (_dir, e) = tiny(TinyModel::default());
    let e = e.with_batch_size(4);
    let texts: Vec<String> = (0..10).map(|i| format!("text number {i}")).collect();
    let mut calls = Vec::new();
    let vectors = e
        .embed_with_progress(&texts, |done, total| calls.push((done, total)))
        .expect("embed");
    assert_eq!(vectors.len(), 10);
    assert_eq!(calls, vec![(4, 10), (8, 10), (10, 10)]);
}

#[test]
fn loading_is_deterministic_and_ids_track_the_files() {
    let (dir, a) = tiny(TinyModel::default());
    let b = Embedder::load(dir.path()).expect("reload");
    assert_eq!(a.model_id(), b.model_id());
    assert_eq!(a.fingerprint().len(), 16);
    assert!(a.model_id().ends_with(a.fingerprint()));
    assert_eq!(
        a.embed(&TEXTS).expect("a"),
        b.embed(&TEXTS).expect("b"),
        "same files, same vectors"
    );
    let (_other, c) = tiny(TinyModel {
        seed: 8,
        ..TinyModel::default()
    });
    assert_ne!(a.fingerprint(), c.fingerprint());
}

#[test]
fn batch_size_is_clamped() {
    let (_dir, e) = tiny(TinyModel::default());
    assert_eq!(e.batch_size(), hopgraph_embed::BATCH_SIZE_DEFAULT);
    let e = e.with_batch_size(0);
    assert_eq!(e.batch_size(), 1);
    let e = e.with_batch_size(usize::MAX);
    assert_eq!(e.batch_size(), hopgraph_embed::BATCH_SIZE_MAX);
}

/// The bf16 dense layers (native AVX-512 BF16 where the CPU has it, else the scalar
/// emulation of the same arithmetic) give the vectors of the f32 dense layers (themselves
/// checked against a plain f64 BERT in `plain_bert`) to a cosine of 0.999, for every activation and pooling mode and a hidden size that is
/// not a multiple of the kernel's 16-column panels; a batch equals its texts one by one.
#[test]
fn bf16_forward_matches_f32() {
    let long = "graph memory ".repeat(40);
    let mut texts: Vec<&str> = TEXTS.to_vec();
    texts.push(&long);
    texts.push("");
    for (act, pooling, hidden) in [
        ("gelu", Pooling::Mean, 32),
        ("geluapproximate", Pooling::Cls, 36),
        ("relu", Pooling::Max, 20),
        ("gelu", Pooling::MeanSqrtLen, 52),
    ] {
        let model = TinyModel {
            hidden_act: act,
            pooling,
            hidden_size: hidden,
            ..TinyModel::default()
        };
        let dir = tempfile::tempdir().expect("temp dir");
        model.write(dir.path()).expect("write tiny model");
        let f32 = Embedder::load_with_precision(dir.path(), Precision::F32).expect("load f32");
        let bf16 = Embedder::load_with_precision(dir.path(), Precision::Bf16).expect("load bf16");
        assert!(f32.kernel().starts_with("f32"), "{}", f32.kernel());
        assert!(bf16.kernel().starts_with("bf16"), "{}", bf16.kernel());
        let want = f32.embed(&texts).expect("embed f32");
        let got = bf16.embed(&texts).expect("embed bf16");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let cos: f32 = g.iter().zip(w).map(|(a, b)| a * b).sum();
            assert!(
                cos >= 0.999,
                "{act} {pooling:?} {hidden}: text {i} cosine {cos}"
            );
            assert!((norm(g) - 1.0).abs() < 1e-5);
        }
        for (i, t) in texts.iter().enumerate() {
            let one = bf16.embed_one(t).expect("embed one");
            assert_eq!(one, got[i], "{act}: text {i} alone differs from its batch");
            let one = f32.embed_one(t).expect("embed one");
            assert_eq!(
                one, want[i],
                "{act}: f32 text {i} alone differs from its batch"
            );
        }
    }
}

/// What `HOPGRAPH_EMBED_PRECISION` in this process's environment must give: `Ok` for
/// unset, `""`, `auto`, `f32` and `bf16`; any other value an error naming the variable, also
/// from `Embedder::load`. Runs in the normal suite (with whatever the environment holds)
/// and, with each value below, in the child processes of
/// [`precision_from_the_environment_is_checked`] (the variable is set only there: setting
/// it in this process would race with the other tests' loads).
#[test]
fn precision_follows_the_variable() {
    const VAR: &str = "HOPGRAPH_EMBED_PRECISION";
    let got = Precision::from_env();
    match std::env::var(VAR).as_deref() {
        Err(_) | Ok("" | "auto") => assert_eq!(got.unwrap(), Precision::Auto),
        Ok("f32") => assert_eq!(got.unwrap(), Precision::F32),
        Ok("bf16") => assert_eq!(got.unwrap(), Precision::Bf16),
        Ok(other) => {
            let e = got.expect_err("a wrong precision is refused").to_string();
            assert!(e.contains(VAR), "the error names the variable: {e}");
            assert!(e.contains(other), "the error quotes the value: {e}");
            let dir = tempfile::tempdir().expect("temp dir");
            TinyModel::default()
                .write(dir.path())
                .expect("write tiny model");
            let e = Embedder::load(dir.path())
                .expect_err("load refuses a wrong precision")
                .to_string();
            assert!(e.contains(VAR), "load's error names the variable: {e}");
        }
    }
}

/// [`precision_follows_the_variable`] in a child process per value of the variable, valid
/// and not, so the parser's answers are checked for values this process does not have.
#[test]
fn precision_from_the_environment_is_checked() {
    let exe = std::env::current_exe().expect("test binary");
    for value in ["", "auto", "f32", "bf16", "fp16", "F32", " f32"] {
        let out = std::process::Command::new(&exe)
            .args([
                "--exact",
                "code_path::precision_follows_the_variable",
                "--test-threads=1",
            ])
            .env("HOPGRAPH_EMBED_PRECISION", value)
            .output()
            .expect("run the test binary");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "HOPGRAPH_EMBED_PRECISION={value:?}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The filter matched the test: it ran and passed (not "0 passed").
        assert!(
            stdout.contains("1 passed"),
            "HOPGRAPH_EMBED_PRECISION={value:?}: the child did not run the test:\n{stdout}"
        );
    }
}
