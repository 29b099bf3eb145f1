//! Helpers shared by this crate's integration tests.

#![allow(dead_code, reason = "each test binary uses a subset")]

use hopgraph::{Direction, Snapshot, TypeFilter};

/// A fresh temporary directory, removed on drop.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("hopgraph-test")
        .tempdir()
        .expect("temp dir")
}

/// Every edge of `snap` as (from key, type name, to key), in node-id order.
pub fn edge_list(snap: &Snapshot) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for id in snap.node_ids() {
        let key = snap.node(id).unwrap().unwrap().key.clone();
        for n in snap.neighbors(id, Direction::Out, &TypeFilter::All) {
            let other = snap.node(n.node).unwrap().unwrap().key.clone();
            out.push((
                key.clone(),
                snap.type_name(n.edge_type).unwrap().to_owned(),
                other,
            ));
        }
    }
    out.sort();
    out
}
