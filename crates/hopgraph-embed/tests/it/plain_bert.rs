//! The f32 encoder against a plain BERT written from the definition in f64 (no blocking, no
//! threads, no SIMD, padding-free by construction): on tiny random models, for every
//! activation and pooling mode and hidden sizes that are not multiples of the kernel's
//! 16-column panels, the vectors agree to a cosine of 0.99999.

use std::collections::HashMap;
use std::path::Path;

use hopgraph_embed::tiny_model::TinyModel;
use hopgraph_embed::{Embedder, Pooling, Precision};
use safetensors::{Dtype, SafeTensors};

/// The tiny model's configuration and tensors, widened to f64.
struct Plain {
    hidden: usize,
    heads: usize,
    layers: usize,
    eps: f64,
    act: String,
    pooling: Pooling,
    tensors: HashMap<String, Vec<f64>>,
}

fn erf(x: f64) -> f64 {
    // Taylor series for |x| <= 3, erfc's continued fraction beyond: ~1e-12.
    if x.abs() <= 3.0 {
        let (mut term, mut total, mut n) = (x, x, 0.0);
        loop {
            n += 1.0;
            term *= -x * x / n;
            let add = term / (2.0 * n + 1.0);
            total += add;
            if add.abs() < 1e-17 {
                break;
            }
        }
        total * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        let a = x.abs();
        let mut f = 0.0;
        for k in (1..60).rev() {
            f = f64::from(k) / 2.0 / (a + f);
        }
        (1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / (a + f)).copysign(x)
    }
}

impl Plain {
    fn read(dir: &Path, pooling: Pooling) -> Plain {
        let config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
        let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
        let file = SafeTensors::deserialize(&bytes).unwrap();
        let mut tensors = HashMap::new();
        for (name, view) in file.tensors() {
            assert_eq!(view.dtype(), Dtype::F32);
            let values = view
                .data()
                .chunks_exact(4)
                .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                .collect();
            tensors.insert(name, values);
        }
        let get = |k: &str| usize::try_from(config[k].as_u64().unwrap()).unwrap();
        Plain {
            hidden: get("hidden_size"),
            heads: get("num_attention_heads"),
            layers: get("num_hidden_layers"),
            eps: config["layer_norm_eps"].as_f64().unwrap(),
            act: config["hidden_act"].as_str().unwrap().to_string(),
            pooling,
            tensors,
        }
    }

    fn t(&self, name: &str) -> &[f64] {
        &self.tensors[name]
    }

    /// `x · Wᵀ + b` for the layer `name` (`[n, k]` weight).
    fn dense(&self, name: &str, x: &[Vec<f64>]) -> Vec<Vec<f64>> {
        let w = self.t(&format!("{name}.weight"));
        let b = self.t(&format!("{name}.bias"));
        let k = x[0].len();
        x.iter()
            .map(|row| {
                b.iter()
                    .enumerate()
                    .map(|(c, bias)| {
                        bias + row
                            .iter()
                            .zip(&w[c * k..(c + 1) * k])
                            .map(|(a, b)| a * b)
                            .sum::<f64>()
                    })
                    .collect()
            })
            .collect()
    }

    fn norm(&self, name: &str, x: &mut [Vec<f64>]) {
        let (g, b) = (
            self.t(&format!("{name}.weight")),
            self.t(&format!("{name}.bias")),
        );
        for row in x {
            let n = row.len() as f64;
            let mean = row.iter().sum::<f64>() / n;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
            for (i, v) in row.iter_mut().enumerate() {
                *v = (*v - mean) / (var + self.eps).sqrt() * g[i] + b[i];
            }
        }
    }

    /// The unit vector of one text's token ids.
    fn embed(&self, ids: &[u32], types: &[u32]) -> Vec<f64> {
        let h = self.hidden;
        let (word, pos, ty) = (
            self.t("embeddings.word_embeddings.weight"),
            self.t("embeddings.position_embeddings.weight"),
            self.t("embeddings.token_type_embeddings.weight"),
        );
        let mut x: Vec<Vec<f64>> = ids
            .iter()
            .zip(types)
            .enumerate()
            .map(|(p, (&id, &t))| {
                let (id, t) = (id as usize, t as usize);
                (0..h)
                    .map(|i| word[id * h + i] + pos[p * h + i] + ty[t * h + i])
                    .collect()
            })
            .collect();
        self.norm("embeddings.LayerNorm", &mut x);
        let d = h / self.heads;
        for l in 0..self.layers {
            let p = format!("encoder.layer.{l}");
            let q = self.dense(&format!("{p}.attention.self.query"), &x);
            let k = self.dense(&format!("{p}.attention.self.key"), &x);
            let v = self.dense(&format!("{p}.attention.self.value"), &x);
            let mut context = vec![vec![0.0; h]; x.len()];
            for head in 0..self.heads {
                let r = head * d..(head + 1) * d;
                for i in 0..x.len() {
                    let scores: Vec<f64> = (0..x.len())
                        .map(|j| {
                            q[i][r.clone()]
                                .iter()
                                .zip(&k[j][r.clone()])
                                .map(|(a, b)| a * b)
                                .sum::<f64>()
                                / (d as f64).sqrt()
                        })
                        .collect();
                    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let total: f64 = e.iter().sum();
                    for (j, ej) in e.iter().enumerate() {
                        for c in r.clone() {
                            context[i][c] += ej / total * v[j][c];
                        }
                    }
                }
            }
            let mut a = self.dense(&format!("{p}.attention.output.dense"), &context);
            for (a, x) in a.iter_mut().zip(&x) {
                for (a, x) in a.iter_mut().zip(x) {
                    *a += x;
                }
            }
            self.norm(&format!("{p}.attention.output.LayerNorm"), &mut a);
            x = a;
            let mut up = self.dense(&format!("{p}.intermediate.dense"), &x);
            for u in up.iter_mut().flatten() {
                let z = *u;
                *u = match self.act.as_str() {
                    "gelu" => 0.5 * z * (1.0 + erf(z / 2f64.sqrt())),
                    "geluapproximate" => {
                        let c = (2.0 / std::f64::consts::PI).sqrt();
                        0.5 * z * (1.0 + (c * (z + 0.044715 * z * z * z)).tanh())
                    }
                    "relu" => z.max(0.0),
                    other => panic!("activation {other}"),
                };
            }
            let mut down = self.dense(&format!("{p}.output.dense"), &up);
            for (o, x) in down.iter_mut().zip(&x) {
                for (o, x) in o.iter_mut().zip(x) {
                    *o += x;
                }
            }
            self.norm(&format!("{p}.output.LayerNorm"), &mut down);
            x = down;
        }
        let n = x.len() as f64;
        let mut v: Vec<f64> = match self.pooling {
            Pooling::Cls => x[0].clone(),
            Pooling::Max => (0..h)
                .map(|i| x.iter().map(|r| r[i]).fold(f64::NEG_INFINITY, f64::max))
                .collect(),
            Pooling::Mean => (0..h)
                .map(|i| x.iter().map(|r| r[i]).sum::<f64>() / n)
                .collect(),
            _ => (0..h)
                .map(|i| x.iter().map(|r| r[i]).sum::<f64>() / n.sqrt())
                .collect(),
        };
        let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
        for a in &mut v {
            *a /= norm;
        }
        v
    }
}

#[test]
fn f32_forward_matches_a_plain_f64_bert() {
    let long = "graph memory ".repeat(40); // beyond the 64-token window: truncated
    let texts = [
        "the cat sat on the mat",
        "hello world",
        "a graph memory of 42 things, linked!",
        "x",
        "",
        "quick brown foxes jump over lazy dogs again and again and again",
        long.as_str(),
    ];
    for (act, pooling, hidden) in [
        ("gelu", Pooling::Mean, 32),
        ("geluapproximate", Pooling::Cls, 36),
        ("relu", Pooling::Max, 20),
        ("gelu", Pooling::MeanSqrtLen, 52),
        ("gelu", Pooling::Mean, 100),
    ] {
        let model = TinyModel {
            hidden_act: act,
            pooling,
            hidden_size: hidden,
            ..TinyModel::default()
        };
        let dir = tempfile::tempdir().expect("temp dir");
        model.write(dir.path()).expect("write tiny model");
        let e = Embedder::load_with_precision(dir.path(), Precision::F32).expect("load f32");
        assert!(e.kernel().starts_with("f32"), "{}", e.kernel());
        let got = e.embed(&texts).expect("embed");

        let plain = Plain::read(dir.path(), pooling);
        for (i, (text, g)) in texts.iter().zip(&got).enumerate() {
            let ids = e.token_ids(text);
            let want = plain.embed(&ids, &vec![0; ids.len()]);
            let cos: f64 = g.iter().zip(&want).map(|(a, b)| f64::from(*a) * b).sum();
            let diff = g
                .iter()
                .zip(&want)
                .map(|(a, b)| (f64::from(*a) - b).abs())
                .fold(0.0, f64::max);
            assert!(
                cos >= 0.99999 && diff < 1e-4,
                "{act} {pooling:?} {hidden}: text {i} cosine {cos}, max difference {diff}"
            );
        }
    }
}
