//! Helpers shared by the integration tests.

use hopgraph::{Database, Direction, EdgeProps, NodeProps, Snapshot, TypeFilter, WriteBatch};

/// A fresh temporary directory for one database.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("hopgraph-test")
        .tempdir()
        .expect("temp dir")
}

/// A node with a title.
pub fn titled(title: &str) -> NodeProps {
    NodeProps {
        title: title.to_owned(),
        ..NodeProps::default()
    }
}

/// Commits nodes `keys` (ensure) and edges `(source, type, target)`.
pub fn commit_edges(db: &Database, edges: &[(&str, &str, &str)]) {
    let mut b = WriteBatch::new();
    for (s, _, t) in edges {
        b.ensure_node(*s).ensure_node(*t);
    }
    for (s, ty, t) in edges {
        b.link(*s, *ty, *t, EdgeProps::default());
    }
    db.commit(b).expect("commit");
}

/// The sorted list of (source key, type, target key) of every live edge.
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
