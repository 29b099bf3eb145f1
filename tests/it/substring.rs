//! `Snapshot::substring_candidates` against a brute-force scan: over random nodes in two
//! segments (with updates and deletes between them) and the delta, every live node one of
//! whose texts contains the query (both lowercased) is a candidate, for queries cut from
//! the nodes' own texts anywhere (across words, punctuation and multi-byte characters) and
//! for random ones.

use std::collections::BTreeSet;

use hopgraph::{Database, NodeId, NodeProps, Snapshot, WriteBatch};
use proptest::prelude::*;
use serde_json::json;

use crate::common::tempdir;

/// Letters with case mappings that change length or depend on context, digits, CJK,
/// punctuation and spaces.
const TEXT: &str = "[a-cA-C0-9 .,'_ΣσςßİéÉ数据-]{0,10}";

#[derive(Clone, Debug)]
struct Ent {
    key: u8,
    kind: String,
    title: String,
    obs: Vec<String>,
}

fn ent() -> impl Strategy<Value = Ent> {
    (0u8..40, TEXT, TEXT, prop::collection::vec(TEXT, 0..3)).prop_map(|(key, kind, title, obs)| {
        Ent {
            key,
            kind,
            title,
            obs,
        }
    })
}

fn key_of(e: &Ent) -> String {
    // Keys carry text too (case, punctuation): part of what is searched.
    format!("K{}-{}", e.key, e.title.chars().take(3).collect::<String>())
}

fn write(db: &Database, ents: &[Ent], deletes: &[String]) {
    let mut b = WriteBatch::new();
    for e in ents {
        let props = NodeProps {
            kind: e.kind.clone(),
            title: e.title.clone(),
            props: json!({"observations": e.obs, "note": e.title.to_uppercase()})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            ..NodeProps::default()
        };
        b.upsert_node(key_of(e), props);
    }
    for k in deletes {
        b.delete_node(k.clone());
    }
    db.commit(b).unwrap();
}

/// The texts the engine promises to cover, as a caller would read them.
fn texts(snap: &Snapshot, id: NodeId) -> Vec<String> {
    let n = snap.node(id).unwrap().unwrap();
    let mut t = vec![
        n.key.clone(),
        n.props.kind.clone(),
        n.props.title.clone(),
        n.props.content.clone(),
        n.props.status.clone(),
    ];
    for v in n.props.props.values() {
        match v {
            serde_json::Value::String(s) => t.push(s.clone()),
            serde_json::Value::Array(a) => {
                t.extend(a.iter().filter_map(|x| x.as_str().map(str::to_owned)));
            }
            _ => {}
        }
    }
    t
}

fn check(snap: &Snapshot, query: &str) -> Result<(), TestCaseError> {
    let q = query.to_lowercase();
    let want: BTreeSet<NodeId> = snap
        .node_ids()
        .filter(|&id| {
            texts(snap, id)
                .iter()
                .any(|t| t.to_lowercase().contains(&q))
        })
        .collect();
    match snap.substring_candidates(query).unwrap() {
        None => prop_assert!(
            !q.chars().any(char::is_alphanumeric),
            "no candidates for {query:?}"
        ),
        Some(c) => {
            prop_assert!(c.windows(2).all(|w| w[0] < w[1]), "increasing, no repeats");
            prop_assert!(c.iter().all(|&id| snap.contains_node(id)), "live only");
            let got: BTreeSet<NodeId> = c.into_iter().collect();
            let missing: Vec<_> = want.difference(&got).collect();
            prop_assert!(missing.is_empty(), "{query:?}: missing {missing:?}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn candidates_cover_every_match(
        first in prop::collection::vec(ent(), 1..30),
        second in prop::collection::vec(ent(), 0..15),
        delta in prop::collection::vec(ent(), 0..10),
        dels in prop::collection::vec(any::<prop::sample::Index>(), 0..5),
        cuts in prop::collection::vec((any::<prop::sample::Index>(), 0usize..12, 1usize..8), 1..25),
        random in prop::collection::vec(TEXT, 1..10),
    ) {
        let dir = tempdir();
        let db = Database::open(dir.path()).unwrap();
        write(&db, &first, &[]);
        db.checkpoint().unwrap();
        let keys: Vec<String> = first.iter().map(key_of).collect();
        let gone: Vec<String> = dels.iter().map(|i| keys[i.index(keys.len())].clone()).collect();
        write(&db, &second, &gone);
        db.checkpoint().unwrap();
        write(&db, &delta, &[]);
        let snap = db.snapshot();
        let all_texts: Vec<String> = snap.node_ids().flat_map(|id| texts(&snap, id)).collect();
        for (i, start, len) in &cuts {
            if all_texts.is_empty() {
                break;
            }
            let t = &all_texts[i.index(all_texts.len())];
            let cut: String = t.chars().skip(*start).take(*len).collect();
            check(&snap, &cut)?;
            check(&snap, &cut.to_uppercase())?;
        }
        for q in &random {
            check(&snap, q)?;
        }
    }
}
