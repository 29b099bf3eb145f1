//! The kernel on real snapshots: shortest paths agree with a plain BFS oracle whether edges
//! live in the delta, in several segments or are partly tombstoned, and before and after
//! checkpoint, compaction and reopen.

use std::collections::{BTreeSet, VecDeque};

use hopgraph::traverse::{Budget, PathOutcome, PathQuery, Scratch, shortest_path};
use hopgraph::{Database, Direction, EdgeProps, Options, Snapshot, WriteBatch};
use proptest::prelude::*;

use crate::common::tempdir;

const TYPES: [&str; 3] = ["caused_by", "related_to", "supersedes"];
const N: u8 = 12;

type Edge = (u8, u8, u8);

fn key(k: u8) -> String {
    format!("m{k}")
}

/// Hops of a shortest path over `edges` (source, target, type) with the given rules.
fn oracle(
    edges: &BTreeSet<Edge>,
    from: u8,
    to: u8,
    dir: Direction,
    types: &[u8],
    max_hops: u32,
) -> Option<u32> {
    let mut dist = [u32::MAX; N as usize];
    dist[from as usize] = 0;
    let mut q = VecDeque::from([from]);
    while let Some(u) = q.pop_front() {
        if u == to {
            return Some(dist[u as usize]);
        }
        if dist[u as usize] == max_hops {
            continue;
        }
        for &(s, t, y) in edges {
            if !types.contains(&y) {
                continue;
            }
            let next = match dir {
                Direction::Out => (s == u).then_some(t),
                Direction::In => (t == u).then_some(s),
                Direction::Both => (s == u).then_some(t).or((t == u).then_some(s)),
            };
            if let Some(v) = next
                && dist[v as usize] == u32::MAX
            {
                dist[v as usize] = dist[u as usize] + 1;
                q.push_back(v);
            }
        }
    }
    None
}

/// The kernel's answer: hop count, after checking every hop is a live edge of an allowed
/// type walked in an allowed direction.
fn kernel(
    snap: &Snapshot,
    scratch: &mut Scratch,
    from: u8,
    to: u8,
    dir: Direction,
    types: &[u8],
    max_hops: u32,
) -> Option<u32> {
    let names: Vec<&str> = types.iter().map(|&t| TYPES[t as usize]).collect();
    let (Some(f), Some(t)) = (snap.node_id(&key(from)), snap.node_id(&key(to))) else {
        return None;
    };
    let q = PathQuery {
        direction: dir,
        types: snap.type_filter(&names),
        max_hops,
        budget: Budget::default(),
    };
    match shortest_path(snap, scratch, f, t, &q) {
        PathOutcome::Found(p) => {
            assert_eq!(p.nodes.first(), Some(&f));
            assert_eq!(p.nodes.last(), Some(&t));
            for (i, h) in p.hops.iter().enumerate() {
                let e = snap.edge(h.edge).unwrap().expect("path edge is live");
                let (a, b) = (p.nodes[i], p.nodes[i + 1]);
                assert_eq!(
                    (e.source, e.target),
                    if h.forward { (a, b) } else { (b, a) }
                );
                assert!(names.contains(&snap.type_name(e.edge_type).unwrap()));
                assert!(dir == Direction::Both || (dir == Direction::Out) == h.forward);
            }
            Some(u32::try_from(p.hops.len()).unwrap())
        }
        PathOutcome::NotFound => None,
        PathOutcome::LimitReached { .. } => panic!("budget hit on a tiny graph"),
    }
}

fn commit(db: &Database, add: &[Edge], remove: &[Edge]) {
    let mut b = WriteBatch::new();
    for k in 0..N {
        b.ensure_node(key(k));
    }
    // Removals first, as the model applies them.
    for &(s, t, y) in remove {
        b.unlink_triple(key(s), TYPES[y as usize], key(t));
    }
    for &(s, t, y) in add {
        b.link(key(s), TYPES[y as usize], key(t), EdgeProps::default());
    }
    db.commit(b).unwrap();
}

fn edges() -> impl Strategy<Value = Vec<Edge>> {
    prop::collection::vec((0..N, 0..N, 0u8..3), 0..30)
}

fn queries() -> impl Strategy<Value = Vec<(u8, u8, u8, u8, u32)>> {
    prop::collection::vec((0..N, 0..N, 0u8..3, 1u8..8, 0u32..6), 1..12)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn paths_agree_across_layouts(a in edges(), b in edges(), c in edges(), dels in prop::collection::vec(any::<prop::sample::Index>(), 0..8), qs in queries()) {
        let dir = tempdir();
        let db = Database::open_with(dir.path(), Options::default().durability(hopgraph::Durability::Buffered)).unwrap();
        let mut model: BTreeSet<Edge> = BTreeSet::new();
        // Segment 1, segment 2 with tombstones for part of segment 1, then a delta.
        commit(&db, &a, &[]);
        model.extend(a.iter().copied());
        db.checkpoint().unwrap();
        let all: Vec<Edge> = model.iter().copied().collect();
        let gone: Vec<Edge> = if all.is_empty() { vec![] } else { dels.iter().map(|i| all[i.index(all.len())]).collect() };
        commit(&db, &b, &gone);
        for g in &gone { model.remove(g); }
        model.extend(b.iter().copied());
        db.checkpoint().unwrap();
        commit(&db, &c, &[]);
        model.extend(c.iter().copied());

        let mut scratch = Scratch::new();
        let answer = |db: &Database, scratch: &mut Scratch| -> Vec<Option<u32>> {
            let snap = db.snapshot();
            qs.iter().map(|&(f, t, d, tmask, h)| {
                let dir = [Direction::Out, Direction::In, Direction::Both][d as usize];
                let types: Vec<u8> = (0..3).filter(|i| tmask & (1 << i) != 0).collect();
                kernel(&snap, scratch, f, t, dir, &types, h)
            }).collect()
        };
        let want: Vec<Option<u32>> = qs.iter().map(|&(f, t, d, tmask, h)| {
            let dir = [Direction::Out, Direction::In, Direction::Both][d as usize];
            let types: Vec<u8> = (0..3).filter(|i| tmask & (1 << i) != 0).collect();
            oracle(&model, f, t, dir, &types, h)
        }).collect();
        prop_assert_eq!(&answer(&db, &mut scratch), &want, "delta + 2 segments + tombstones");
        db.checkpoint().unwrap();
        prop_assert_eq!(&answer(&db, &mut scratch), &want, "after checkpoint");
        db.compact().unwrap();
        prop_assert_eq!(&answer(&db, &mut scratch), &want, "after compaction");
        drop(db);
        let db = Database::open(dir.path()).unwrap();
        prop_assert_eq!(&answer(&db, &mut scratch), &want, "after reopen");
        let snap = db.snapshot();
        prop_assert_eq!(snap.edge_count(), model.len() as u64);
    }
}

/// The key-level all-shortest-paths, expansion and traversal agree with hand-computed
/// answers on a diamond with a tail, and name unknown keys.
#[test]
fn key_level_all_paths_expand_and_traverse() {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    for (s, t, ty) in [
        ("a", "b", "x"),
        ("a", "d", "y"),
        ("b", "c", "x"),
        ("d", "c", "x"),
        ("c", "e", "x"),
    ] {
        b.link_creating_missing(s, ty, t, EdgeProps::default());
    }
    db.commit(b).unwrap();
    let snap = db.snapshot();
    let spec = hopgraph::PathSpec::new()
        .direction(Direction::Out)
        .max_hops(5);

    let all = snap.all_shortest_paths("a", "e", &spec, 10).unwrap();
    let keys: Vec<Vec<&str>> = all.paths.iter().map(|p| p.keys()).collect();
    assert_eq!(
        keys,
        vec![vec!["a", "b", "c", "e"], vec!["a", "d", "c", "e"]]
    );
    assert!(!all.truncated);
    let one = snap.all_shortest_paths("a", "e", &spec, 1).unwrap();
    assert_eq!(one.paths.len(), 1);
    assert!(one.truncated);
    // Only type x: the path through d (a -y-> d) is gone.
    let x_only = spec.clone().types(["x"]);
    let via_x = snap.all_shortest_paths("a", "e", &x_only, 10).unwrap();
    assert_eq!(via_x.paths.len(), 1);
    assert_eq!(via_x.paths[0].keys(), ["a", "b", "c", "e"]);
    assert!(
        snap.all_shortest_paths("e", "a", &spec, 10)
            .unwrap()
            .paths
            .is_empty()
    );

    let near = snap
        .expand_from(&["a"], &spec.clone().max_hops(2), 100)
        .unwrap();
    let reached: Vec<(&str, u32)> = near
        .nodes
        .iter()
        .map(|n| (n.key.as_str(), n.hops))
        .collect();
    assert_eq!(reached, [("b", 1), ("d", 1), ("c", 2)]);
    assert!(near.nodes.iter().all(|n| n.seed == "a"));
    let capped = snap.expand_from(&["a"], &spec, 2).unwrap();
    assert_eq!(capped.nodes.len(), 2);
    assert!(capped.truncated);

    let walk = snap.traverse_from("a", &spec, 100).unwrap();
    let visited: Vec<(&str, u32)> = walk
        .visits
        .iter()
        .map(|v| (v.key.as_str(), v.depth))
        .collect();
    assert_eq!(visited, [("b", 1), ("d", 1), ("c", 2), ("e", 3)]);
    let to_e = &walk.visits[3];
    assert_eq!(to_e.steps.len(), 3);
    assert!(to_e.steps.iter().all(|s| s.forward));

    for e in [
        snap.all_shortest_paths("a", "nope", &spec, 1).unwrap_err(),
        snap.expand_from(&["nope"], &spec, 1).unwrap_err(),
        snap.traverse_from("nope", &spec, 1).unwrap_err(),
    ] {
        assert!(matches!(e, hopgraph::Error::NodeNotFound { .. }), "{e}");
    }
}
