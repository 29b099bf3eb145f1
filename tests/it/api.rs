//! The key-level API a host application starts from: one call per common question.

use hopgraph::{Database, Direction, EdgeProps, Error, PathSpec, WriteBatch};

use crate::common::tempdir;

/// a -caused_by-> b -caused_by-> c, a -related_to-> c, d alone; written with endpoints
/// created on demand.
fn graph() -> (tempfile::TempDir, Database) {
    let dir = tempdir();
    let db = Database::open(dir.path()).unwrap();
    let mut b = WriteBatch::new();
    b.link_creating_missing("a", "caused_by", "b", EdgeProps::default())
        .link_creating_missing("b", "caused_by", "c", EdgeProps::default())
        .link_creating_missing("a", "related_to", "c", EdgeProps::default())
        .ensure_node("d");
    db.commit(b).unwrap();
    (dir, db)
}

#[test]
fn shortest_path_by_key_respects_types_direction_and_hops() {
    let (_dir, db) = graph();
    let p = db
        .shortest_path("a", "c", &PathSpec::new())
        .unwrap()
        .unwrap();
    assert_eq!(p.keys(), ["a", "c"]);
    assert_eq!(p.steps[0].edge_type, "related_to");
    assert!(p.steps[0].forward);

    let caused = PathSpec::new().types(["caused_by"]);
    let p = db.shortest_path("a", "c", &caused).unwrap().unwrap();
    assert_eq!(p.keys(), ["a", "b", "c"]);
    assert_eq!(p.len(), 2);
    assert!(
        db.shortest_path("a", "c", &caused.clone().max_hops(1))
            .unwrap()
            .is_none()
    );
    let backward = caused.clone().direction(Direction::In);
    assert!(db.shortest_path("a", "c", &backward).unwrap().is_none());
    let p = db.shortest_path("c", "a", &backward).unwrap().unwrap();
    assert_eq!(p.keys(), ["c", "b", "a"]);
    assert!(!p.steps[0].forward);

    assert!(
        db.shortest_path("a", "d", &PathSpec::new())
            .unwrap()
            .is_none()
    );
    let same = db
        .shortest_path("d", "d", &PathSpec::new())
        .unwrap()
        .unwrap();
    assert!(same.is_empty());
    // A type no edge has matches nothing.
    let none = PathSpec::new().types(["no_such_type"]);
    assert!(db.shortest_path("a", "b", &none).unwrap().is_none());
}

#[test]
fn unknown_keys_and_exhausted_budgets_are_typed_errors() {
    let (_dir, db) = graph();
    match db.shortest_path("a", "zz", &PathSpec::new()) {
        Err(Error::NodeNotFound { key }) => assert_eq!(key, "zz"),
        other => panic!("expected NodeNotFound, got {other:?}"),
    }
    match db.shortest_path(
        "a",
        "c",
        &PathSpec::new().types(["caused_by"]).visited_max(2),
    ) {
        Err(Error::LimitReached { visited }) => assert!(visited >= 2),
        other => panic!("expected LimitReached, got {other:?}"),
    }
}

#[test]
fn neighbors_of_by_key() {
    let (_dir, db) = graph();
    let out = db
        .neighbors_of("a", Direction::Out, &[] as &[&str])
        .unwrap();
    let got: Vec<(&str, &str, bool)> = out
        .iter()
        .map(|n| (n.key.as_str(), n.edge_type.as_str(), n.outgoing))
        .collect();
    assert_eq!(got, [("b", "caused_by", true), ("c", "related_to", true)]);
    let into_c = db.neighbors_of("c", Direction::In, &["caused_by"]).unwrap();
    assert_eq!(into_c.len(), 1);
    assert_eq!(into_c[0].key, "b");
    assert!(!into_c[0].outgoing);
    assert!(matches!(
        db.neighbors_of("zz", Direction::Both, &[] as &[&str]),
        Err(Error::NodeNotFound { .. })
    ));
}

#[test]
fn link_creating_missing_keeps_existing_nodes() {
    let (_dir, db) = graph();
    let before = db.snapshot().node_by_key("a").unwrap().unwrap();
    let mut b = WriteBatch::new();
    b.link_creating_missing("a", "caused_by", "e", EdgeProps::default());
    db.commit(b).unwrap();
    let snap = db.snapshot();
    let after = snap.node_by_key("a").unwrap().unwrap();
    assert_eq!(before.id, after.id);
    assert!(snap.node_id("e").is_some());
    assert_eq!(snap.node_count(), 5);
}
