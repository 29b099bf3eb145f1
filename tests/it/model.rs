//! Model test: random batches, checkpoints, compactions, bulk loads and reopens against a
//! plain in-memory model; every read must agree, and out- and in-adjacency must be
//! transposes of each other.

use std::collections::{BTreeMap, BTreeSet};

use hopgraph::{BulkLoad, Database, Direction, EdgeProps, Options, TypeFilter, WriteBatch};
use proptest::prelude::*;

use crate::common::{tempdir, titled};

const TYPES: [&str; 3] = ["caused_by", "related_to", "supersedes"];

#[derive(Clone, Debug)]
enum Req {
    Upsert(u8, u8),
    Delete(u8),
    Link(u8, u8, u8),
    Unlink(u8, u8, u8),
}

#[derive(Clone, Debug)]
enum Step {
    Batch(Vec<Req>),
    Checkpoint,
    Compact,
    Reopen,
    Bulk(Vec<(u8, u8, u8)>),
}

/// Keys 0..8; the odd ones too long to sit inline in a key-index slot (over 11 bytes).
fn key(k: u8) -> String {
    if k.is_multiple_of(2) {
        format!("k{k}")
    } else {
        format!("memory-key-{k:03}-long")
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Model {
    nodes: BTreeMap<String, String>,
    edges: BTreeSet<(String, String, String)>,
}

impl Model {
    /// Applies a batch; `Err` when the engine must reject it (a link to a missing node).
    fn apply(&mut self, reqs: &[Req]) -> Result<(), ()> {
        let mut m = self.clone();
        for r in reqs {
            match r {
                Req::Upsert(k, t) => {
                    m.nodes.insert(key(*k), format!("t{t}"));
                }
                Req::Delete(k) => {
                    let k = key(*k);
                    m.nodes.remove(&k);
                    m.edges.retain(|(s, _, t)| *s != k && *t != k);
                }
                Req::Link(s, t, ty) => {
                    if !m.nodes.contains_key(&key(*s)) || !m.nodes.contains_key(&key(*t)) {
                        return Err(());
                    }
                    m.edges
                        .insert((key(*s), TYPES[*ty as usize].to_owned(), key(*t)));
                }
                Req::Unlink(s, t, ty) => {
                    m.edges
                        .remove(&(key(*s), TYPES[*ty as usize].to_owned(), key(*t)));
                }
            }
        }
        *self = m;
        Ok(())
    }
}

fn check(db: &Database, model: &Model) -> Result<(), TestCaseError> {
    let snap = db.snapshot();
    let mut nodes = BTreeMap::new();
    for id in snap.node_ids() {
        let n = snap.node(id).unwrap().unwrap();
        prop_assert_eq!(snap.node_id(&n.key), Some(id));
        nodes.insert(n.key.clone(), n.props.title.clone());
    }
    prop_assert_eq!(&nodes, &model.nodes);
    // Key look-ups, one at a time and in pairs (overlapped), agree with the model.
    for a in 0u8..9 {
        let (ka, kb) = (key(a), key((a * 3 + 1) % 9));
        let one = [snap.node_id(&ka), snap.node_id(&kb)];
        prop_assert_eq!(snap.node_id_pair(&ka, &kb), one, "{} {}", ka, kb);
        prop_assert_eq!(one[0].is_some(), model.nodes.contains_key(&ka), "{}", ka);
    }
    prop_assert_eq!(snap.node_count(), model.nodes.len() as u64);
    let mut out = BTreeSet::new();
    let mut inn = BTreeSet::new();
    for id in snap.node_ids() {
        let k = snap.node(id).unwrap().unwrap().key.clone();
        for n in snap.neighbors(id, Direction::Out, &TypeFilter::All) {
            let other = snap.node(n.node).unwrap().unwrap().key.clone();
            let ty = snap.type_name(n.edge_type).unwrap().to_owned();
            let e = snap.edge(n.edge).unwrap().unwrap();
            prop_assert_eq!((e.source, e.target, e.edge_type), (id, n.node, n.edge_type));
            prop_assert_eq!(snap.edge_by_triple(id, n.edge_type, n.node), Some(n.edge));
            prop_assert!(out.insert((k.clone(), ty, other)), "duplicate out edge");
        }
        for n in snap.neighbors(id, Direction::In, &TypeFilter::All) {
            let other = snap.node(n.node).unwrap().unwrap().key.clone();
            let ty = snap.type_name(n.edge_type).unwrap().to_owned();
            prop_assert!(inn.insert((other, ty, k.clone())), "duplicate in edge");
        }
        // Type filters select exactly the edges of those types.
        for t in TYPES {
            let f = snap.type_filter(&[t]);
            let want = snap
                .neighbors(id, Direction::Both, &TypeFilter::All)
                .iter()
                .filter(|n| snap.type_name(n.edge_type) == Some(t))
                .count();
            prop_assert_eq!(snap.neighbors(id, Direction::Both, &f).len(), want);
        }
    }
    prop_assert_eq!(&out, &model.edges, "out-adjacency differs from the model");
    prop_assert_eq!(
        &inn,
        &out,
        "in-adjacency is not the transpose of out-adjacency"
    );
    prop_assert_eq!(snap.edge_count(), model.edges.len() as u64);
    let per_type: u64 = snap.edge_types().iter().map(|(_, _, c)| c).sum();
    prop_assert_eq!(per_type, model.edges.len() as u64);
    Ok(())
}

fn req() -> impl Strategy<Value = Req> {
    prop_oneof![
        3 => (0u8..8, 0u8..4).prop_map(|(k, t)| Req::Upsert(k, t)),
        1 => (0u8..8).prop_map(Req::Delete),
        5 => (0u8..8, 0u8..8, 0u8..3).prop_map(|(s, t, y)| Req::Link(s, t, y)),
        2 => (0u8..8, 0u8..8, 0u8..3).prop_map(|(s, t, y)| Req::Unlink(s, t, y)),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => prop::collection::vec(req(), 1..5).prop_map(Step::Batch),
        2 => Just(Step::Checkpoint),
        1 => Just(Step::Compact),
        2 => Just(Step::Reopen),
        1 => prop::collection::vec((0u8..8, 0u8..8, 0u8..3), 0..6).prop_map(Step::Bulk),
    ]
}

fn options() -> Options {
    // Small thresholds so automatic checkpoints and compactions happen too.
    Options::default()
        .checkpoint_wal_bytes(2048)
        .compaction_segments_max(3)
        .durability(hopgraph::Durability::Buffered)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn engine_agrees_with_model(steps in prop::collection::vec(step(), 1..40)) {
        let dir = tempdir();
        let mut db = Database::open_with(dir.path(), options()).unwrap();
        let mut model = Model::default();
        for s in &steps {
            match s {
                Step::Batch(reqs) => {
                    let mut b = WriteBatch::new();
                    for r in reqs {
                        match r {
                            Req::Upsert(k, t) => b.upsert_node(key(*k), titled(&format!("t{t}"))),
                            Req::Delete(k) => b.delete_node(key(*k)),
                            Req::Link(s, t, y) => b.link(key(*s), TYPES[*y as usize], key(*t), EdgeProps::default()),
                            Req::Unlink(s, t, y) => b.unlink_triple(key(*s), TYPES[*y as usize], key(*t)),
                        };
                    }
                    let got = db.commit(b);
                    let want = model.apply(reqs);
                    prop_assert_eq!(got.is_ok(), want.is_ok(), "commit outcome differs: {:?}", got);
                    if let Ok(info) = got {
                        prop_assert_eq!(info.results.len(), reqs.len());
                    }
                }
                Step::Checkpoint => { db.checkpoint().unwrap(); }
                Step::Compact => { db.compact().unwrap(); }
                Step::Reopen => {
                    drop(db);
                    db = Database::open_with(dir.path(), options()).unwrap();
                    db.verify().unwrap();
                }
                Step::Bulk(edges) => {
                    let mut bl = BulkLoad::new();
                    for (s, t, y) in edges {
                        bl.edge(&key(*s), TYPES[*y as usize], &key(*t), EdgeProps::default()).unwrap();
                        model.nodes.entry(key(*s)).or_default();
                        model.nodes.entry(key(*t)).or_default();
                        model.edges.insert((key(*s), TYPES[*y as usize].to_owned(), key(*t)));
                    }
                    db.bulk_load(bl).unwrap();
                }
            }
            check(&db, &model)?;
        }
        db.verify().unwrap();
    }
}
