//! Validity intervals and reads "as of" a moment, against a plain in-memory model: random
//! histories of creates (with and without an interval), ends of nodes and edges, links,
//! deletes, checkpoints, compactions and reopens; after each step every node's interval,
//! `node_valid_at`, each node's neighbours, the shortest path between every pair and a
//! text search are checked at moments before, between and after the intervals' ends.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use hopgraph::{
    Database, Direction, EdgeId, EdgeProps, NodeFilter, NodePatch, PathSpec, TextQuery, WriteBatch,
};
use proptest::prelude::*;

use crate::common::{tempdir, titled};

const TYPES: [&str; 2] = ["derived_from", "related_to"];
/// Explicit times the histories use (ms): far before any commit time, and two far after
/// (year 2096), so that ends exist after every start.
const TIMES: [u64; 7] = [100, 200, 300, 400, 500, FUTURE, FUTURE + 1_000];
const FUTURE: u64 = 4_000_000_000_000;

#[derive(Clone, Debug)]
enum Step {
    /// Create node k (if absent), with an explicit interval (from index, length in
    /// `TIMES` steps, 0: never ends) or from its commit time.
    Create(u8, Option<(u8, u8)>),
    /// End node k at `TIMES[i]`.
    EndNode(u8, u8),
    /// Link s -ty-> t (if both exist), with an explicit interval or from commit time.
    Link(u8, u8, u8, Option<(u8, u8)>),
    /// End that edge at `TIMES[i]`.
    EndEdge(u8, u8, u8, u8),
    Delete(u8),
    Checkpoint,
    Compact,
    Reopen,
}

fn key(k: u8) -> String {
    format!("memory-{k}")
}

fn interval(spec: Option<(u8, u8)>) -> (Option<u64>, Option<u64>) {
    match spec {
        None => (None, None),
        Some((f, len)) => {
            let from = TIMES[f as usize];
            let to = (len > 0).then(|| from + 100 * u64::from(len));
            (Some(from), to)
        }
    }
}

/// An edge of the model: (source, type, target) → (id, valid_from, valid_to).
type EdgeMap = BTreeMap<(u8, u8, u8), (EdgeId, u64, Option<u64>)>;

#[derive(Clone, Debug, Default)]
struct Model {
    /// key → (valid_from, valid_to)
    nodes: BTreeMap<u8, (u64, Option<u64>)>,
    /// (source, type, target) → (edge id, valid_from, valid_to)
    edges: EdgeMap,
}

fn valid(from: u64, to: Option<u64>, t: u64) -> bool {
    from <= t && to.is_none_or(|to| t < to)
}

impl Model {
    fn valid_nodes(&self, t: u64) -> BTreeSet<u8> {
        self.nodes
            .iter()
            .filter(|&(_, &(f, to))| valid(f, to, t))
            .map(|(&k, _)| k)
            .collect()
    }

    /// Valid edges between valid nodes at `t`, as (source, type, target).
    fn valid_edges(&self, t: u64) -> Vec<(u8, u8, u8)> {
        let nodes = self.valid_nodes(t);
        self.edges
            .iter()
            .filter(|&(&(s, _, d), &(_, f, to))| {
                valid(f, to, t) && nodes.contains(&s) && nodes.contains(&d)
            })
            .map(|(&e, _)| e)
            .collect()
    }

    /// Hops of a shortest path ignoring direction, over what is valid at `t`.
    fn hops(&self, a: u8, b: u8, t: u64) -> Option<u32> {
        let edges = self.valid_edges(t);
        let mut dist = BTreeMap::from([(a, 0u32)]);
        let mut queue = VecDeque::from([a]);
        while let Some(x) = queue.pop_front() {
            if x == b {
                return dist.get(&b).copied();
            }
            let d = dist[&x];
            for &(s, _, e) in &edges {
                for (from, to) in [(s, e), (e, s)] {
                    if from == x && !dist.contains_key(&to) {
                        dist.insert(to, d + 1);
                        queue.push_back(to);
                    }
                }
            }
        }
        dist.get(&b).copied()
    }
}

fn step_strategy() -> impl Strategy<Value = Step> {
    let k = 0u8..6;
    let iv = proptest::option::of((0u8..7, 0u8..3));
    prop_oneof![
        4 => (k.clone(), iv.clone()).prop_map(|(k, i)| Step::Create(k, i)),
        2 => (k.clone(), 0u8..7).prop_map(|(k, i)| Step::EndNode(k, i)),
        5 => (k.clone(), k.clone(), 0u8..2, iv).prop_map(|(s, t, ty, i)| Step::Link(s, t, ty, i)),
        2 => (k.clone(), k.clone(), 0u8..2, 0u8..7).prop_map(|(s, t, ty, i)| Step::EndEdge(s, t, ty, i)),
        1 => k.prop_map(Step::Delete),
        1 => Just(Step::Checkpoint),
        1 => Just(Step::Compact),
        1 => Just(Step::Reopen),
    ]
}

/// Applies `step` to the engine and the model; the engine must reject exactly what the
/// model says is invalid (an end not after the start, an edge already ended).
fn apply(db: &mut Database, dir: &std::path::Path, m: &mut Model, step: &Step) {
    match step {
        Step::Create(k, spec) => {
            if m.nodes.contains_key(k) {
                return;
            }
            let (from, to) = interval(*spec);
            let mut b = WriteBatch::new();
            b.create_node(key(*k), titled("memo note"));
            if from.is_some() {
                b.update_node(
                    key(*k),
                    NodePatch {
                        valid_from: from,
                        valid_to: Some(to),
                        ..NodePatch::default()
                    },
                );
            }
            db.commit(b).unwrap();
            let snap = db.snapshot();
            let n = snap.node_by_key(&key(*k)).unwrap().unwrap();
            assert_eq!(n.valid_from, from.unwrap_or(n.created_at));
            assert_eq!(n.valid_to, to);
            m.nodes.insert(*k, (n.valid_from, n.valid_to));
        }
        Step::EndNode(k, i) => {
            let Some(&(from, to)) = m.nodes.get(k) else {
                return;
            };
            let at = TIMES[*i as usize];
            let mut b = WriteBatch::new();
            b.update_node(
                key(*k),
                NodePatch {
                    valid_to: Some(Some(at)),
                    ..NodePatch::default()
                },
            );
            let r = db.commit(b);
            if at <= from {
                assert!(r.is_err(), "an end not after the start was accepted");
                let _ = to;
            } else {
                r.unwrap();
                m.nodes.insert(*k, (from, Some(at)));
            }
        }
        Step::Link(s, t, ty, spec) => {
            if !m.nodes.contains_key(s) || !m.nodes.contains_key(t) {
                return;
            }
            let (from, to) = interval(*spec);
            let mut b = WriteBatch::new();
            b.link(
                key(*s),
                TYPES[*ty as usize],
                key(*t),
                EdgeProps {
                    valid_from: from,
                    valid_to: to,
                    ..EdgeProps::default()
                },
            );
            db.commit(b).unwrap();
            if m.edges.contains_key(&(*s, *ty, *t)) {
                return;
            }
            let snap = db.snapshot();
            let (a, z) = (
                snap.node_id(&key(*s)).unwrap(),
                snap.node_id(&key(*t)).unwrap(),
            );
            let ty_id = snap.type_id(TYPES[*ty as usize]).unwrap();
            let id = snap.edge_by_triple(a, ty_id, z).unwrap();
            let e = snap.edge(id).unwrap().unwrap();
            assert_eq!(e.valid_from, from.unwrap_or(e.created_at));
            assert_eq!(e.valid_to, to);
            m.edges
                .insert((*s, *ty, *t), (id, e.valid_from, e.valid_to));
        }
        Step::EndEdge(s, t, ty, i) => {
            let Some(&(id, from, to)) = m.edges.get(&(*s, *ty, *t)) else {
                return;
            };
            let at = TIMES[*i as usize];
            let mut b = WriteBatch::new();
            b.end_edge(id, at);
            let r = db.commit(b);
            if to.is_some() || at <= from {
                assert!(
                    r.is_err(),
                    "ending edge {id:?} ({from}, {to:?}) at {at} was accepted"
                );
            } else {
                r.unwrap();
                m.edges.insert((*s, *ty, *t), (id, from, Some(at)));
            }
        }
        Step::Delete(k) => {
            let mut b = WriteBatch::new();
            b.delete_node(key(*k));
            db.commit(b).unwrap();
            m.nodes.remove(k);
            m.edges.retain(|&(s, _, t), _| s != *k && t != *k);
        }
        Step::Checkpoint => {
            db.checkpoint().unwrap();
            // Every segment's time sections agree with its records and rows.
            db.verify().unwrap();
        }
        Step::Compact => {
            db.compact().unwrap();
            db.verify().unwrap();
        }
        Step::Reopen => {
            let fresh = Database::open(dir).unwrap();
            *db = fresh;
        }
    }
}

fn check(db: &Database, m: &Model) -> Result<(), TestCaseError> {
    let snap = db.snapshot();
    let now = snap
        .node_ids()
        .filter_map(|id| snap.node(id).ok().flatten())
        .map(|n| n.created_at)
        .max()
        .unwrap_or(0);
    let moments = [
        0,
        150,
        250,
        350,
        450,
        550,
        750,
        now,
        now + 1,
        FUTURE - 1,
        FUTURE + 50,
        FUTURE + 950,
        FUTURE + 1_050,
        FUTURE + 5_000,
        u64::MAX - 1,
    ];
    for (&k, &(from, to)) in &m.nodes {
        let n = snap.node_by_key(&key(k)).unwrap().unwrap();
        prop_assert_eq!((n.valid_from, n.valid_to), (from, to), "node {}", k);
    }
    for (&(s, ty, t), &(id, from, to)) in &m.edges {
        let e = snap.edge(id).unwrap().unwrap();
        prop_assert_eq!(
            (e.valid_from, e.valid_to),
            (from, to),
            "edge {} {} {}",
            s,
            ty,
            t
        );
    }
    for t in moments {
        let valid_nodes = m.valid_nodes(t);
        for &k in m.nodes.keys() {
            let id = snap.node_id(&key(k)).unwrap();
            prop_assert_eq!(
                snap.node_valid_at(id, t),
                valid_nodes.contains(&k),
                "node {} at {}",
                k,
                t
            );
        }
        let edges = m.valid_edges(t);
        for &k in m.nodes.keys() {
            let got = snap.neighbors_of_at(&key(k), Direction::Out, &[] as &[&str], Some(t));
            if !valid_nodes.contains(&k) {
                prop_assert!(got.is_err(), "neighbors of {} at {} answered", k, t);
                continue;
            }
            let got: BTreeSet<(String, String)> = got
                .unwrap()
                .into_iter()
                .map(|n| (n.edge_type, n.key))
                .collect();
            let want: BTreeSet<(String, String)> = edges
                .iter()
                .filter(|e| e.0 == k)
                .map(|&(_, ty, d)| (TYPES[ty as usize].to_owned(), key(d)))
                .collect();
            prop_assert_eq!(got, want, "neighbors of {} at {}", k, t);
        }
        for &a in &valid_nodes {
            for &b in &valid_nodes {
                let spec = PathSpec::new().as_of(t);
                let got = snap.shortest_path(&key(a), &key(b), &spec).unwrap();
                let want = m.hops(a, b, t);
                prop_assert_eq!(
                    got.as_ref().map(|p| u32::try_from(p.len()).unwrap()),
                    want,
                    "path {} {} at {}",
                    a,
                    b,
                    t
                );
                for step in got.iter().flat_map(|p| &p.steps) {
                    prop_assert!(
                        snap.edge_valid_at(step.edge, t),
                        "path step not valid at {}",
                        t
                    );
                }
            }
        }
        let hits = snap
            .search_text(
                &TextQuery::new("memo")
                    .limit(50)
                    .filter(NodeFilter::any().valid_at(t)),
            )
            .unwrap();
        let got: BTreeSet<String> = hits
            .iter()
            .map(|h| snap.node(h.node).unwrap().unwrap().key.clone())
            .collect();
        let want: BTreeSet<String> = valid_nodes.iter().map(|&k| key(k)).collect();
        prop_assert_eq!(got, want, "search at {}", t);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// With `edges_only`, no node gets an interval: the reads then take the paths
    /// that check edges only (bitsets of timed and ended CSR entries).
    #[test]
    fn as_of_reads_agree_with_a_model(
        steps in proptest::collection::vec(step_strategy(), 1..40),
        edges_only in any::<bool>(),
    ) {
        let dir = tempdir();
        let mut db = Database::open(dir.path()).unwrap();
        let mut m = Model::default();
        for step in &steps {
            let step = match step {
                Step::Create(k, _) if edges_only => Step::Create(*k, None),
                Step::EndNode(..) if edges_only => continue,
                other => other.clone(),
            };
            apply(&mut db, dir.path(), &mut m, &step);
            check(&db, &m)?;
        }
    }
}

/// Without intervals and with `t` after every creation the view is the snapshot itself;
/// ending an edge makes a path go around it as of then, and not before.
#[test]
fn ended_edge_is_avoided_from_its_end_on() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    for k in ["a", "b", "c", "d"] {
        b.create_node(k, titled(k));
    }
    b.link("a", "r", "b", EdgeProps::default())
        .link("b", "r", "d", EdgeProps::default())
        .link("a", "r", "c", EdgeProps::default())
        .link("c", "r", "x", EdgeProps::default());
    assert!(
        db.commit(b).is_err(),
        "a link to a missing node must fail the batch"
    );
    let mut b = WriteBatch::new();
    for k in ["a", "b", "c", "d", "e"] {
        b.create_node(k, titled(k));
    }
    b.link("a", "r", "b", EdgeProps::default())
        .link("b", "r", "d", EdgeProps::default())
        .link("a", "r", "c", EdgeProps::default())
        .link("c", "r", "e", EdgeProps::default())
        .link("e", "r", "d", EdgeProps::default());
    db.commit(b).unwrap();
    let snap = db.snapshot();
    let created = snap.node_by_key("a").unwrap().unwrap().created_at;
    let later = created + 10_000;
    let path = |snap: &hopgraph::Snapshot, t: Option<u64>| {
        let spec = match t {
            Some(t) => PathSpec::new().as_of(t),
            None => PathSpec::new(),
        };
        snap.shortest_path("a", "d", &spec)
            .unwrap()
            .map(|p| p.keys().join(">"))
    };
    assert_eq!(path(&snap, None).as_deref(), Some("a>b>d"));
    assert_eq!(path(&snap, Some(later)).as_deref(), Some("a>b>d"));
    let ab = snap.edge_by_triple(
        snap.node_id("a").unwrap(),
        snap.type_id("r").unwrap(),
        snap.node_id("b").unwrap(),
    );
    let mut b = WriteBatch::new();
    b.end_edge(ab.unwrap(), later);
    db.commit(b).unwrap();
    // In the delta, in a segment that changes an older one's edge, folded into the rows.
    for stage in 0..3 {
        match stage {
            1 => drop(db.checkpoint().unwrap()),
            2 => drop(db.compact().unwrap()),
            _ => {}
        }
        let snap = db.snapshot();
        assert_eq!(path(&snap, Some(later - 1)).as_deref(), Some("a>b>d"));
        assert_eq!(path(&snap, Some(later)).as_deref(), Some("a>c>e>d"));
        // Without a moment, history stays traceable: the ended edge is still there.
        assert_eq!(path(&snap, None).as_deref(), Some("a>b>d"));
        // Before anything was written nothing exists.
        assert!(matches!(
            snap.shortest_path("a", "d", &PathSpec::new().as_of(created - 1)),
            Err(hopgraph::Error::NodeNotFound { .. })
        ));
        let mut again = WriteBatch::new();
        again.end_edge(ab.unwrap(), later + 5);
        let err = db.commit(again).unwrap_err().to_string();
        assert!(err.contains("already ended"), "{err}");
    }
}

/// Vector search as of a moment: a node ended by then is not a hit, before its end it is,
/// in the delta and from a segment alike.
#[test]
fn vector_search_sees_what_was_valid() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    for (k, v) in [("a", [1.0, 0.0]), ("b", [0.9, 0.1]), ("c", [0.0, 1.0])] {
        let mut p = titled(k);
        p.embedding = Some(v.to_vec());
        b.create_node(k, p);
    }
    db.commit(b).unwrap();
    let created = db.snapshot().node_by_key("a").unwrap().unwrap().created_at;
    let end = created + 1_000;
    let mut b = WriteBatch::new();
    b.update_node(
        "a",
        NodePatch {
            valid_to: Some(Some(end)),
            ..NodePatch::default()
        },
    );
    db.commit(b).unwrap();
    for flush in [false, true] {
        if flush {
            db.checkpoint().unwrap();
        }
        let snap = db.snapshot();
        let hits = |t: u64| -> Vec<String> {
            let q = hopgraph::VectorQuery::new(vec![1.0, 0.0])
                .limit(2)
                .filter(NodeFilter::any().valid_at(t));
            snap.search_vector(&q)
                .unwrap()
                .iter()
                .map(|h| snap.node(h.node).unwrap().unwrap().key.clone())
                .collect()
        };
        assert_eq!(hits(end - 1), ["a", "b"]);
        assert_eq!(hits(end), ["b", "c"]);
        assert!(hits(created - 1).is_empty());
    }
}
