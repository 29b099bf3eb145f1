//! Embedding hopgraph in a build tool: a package dependency graph.
//!
//! Loads `Cargo.lock`-style pairs (package, dependency), then answers the questions a build
//! tool asks: why does A depend on B (a shortest dependency chain), what depends on B
//! directly (reverse neighbors), and what is rebuilt when B changes (everything that
//! reaches B, by expanding backwards).
//!
//! Run: `cargo run --example dependency_graph [DB_DIR]`

use hopgraph::kernel::{ExpandQuery, Scratch, expand};
use hopgraph::{Database, Direction, EdgeProps, PathSpec, WriteBatch};

const DEPENDS: &[(&str, &str)] = &[
    ("app", "http"),
    ("app", "db"),
    ("app", "log"),
    ("http", "tls"),
    ("http", "bytes"),
    ("db", "bytes"),
    ("db", "crc"),
    ("tls", "crypto"),
    ("crypto", "bytes"),
    ("log", "time"),
];

fn main() -> hopgraph::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("hopgraph-example-deps"));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(&dir)?;

    // One atomic batch; packages are created the first time an edge names them.
    let mut batch = WriteBatch::new();
    for &(pkg, dep) in DEPENDS {
        batch.link_creating_missing(pkg, "depends_on", dep, EdgeProps::default());
    }
    db.commit(batch)?;

    // Why does `app` depend on `crypto`?
    let spec = PathSpec::new()
        .types(["depends_on"])
        .direction(Direction::Out);
    if let Some(chain) = db.shortest_path("app", "crypto", &spec)? {
        println!("app needs crypto through: {}", chain.keys().join(" -> "));
    }

    // Who depends on `bytes` directly?
    let users = db.neighbors_of("bytes", Direction::In, &["depends_on"])?;
    let names: Vec<&str> = users.iter().map(|n| n.key.as_str()).collect();
    println!("direct users of bytes: {}", names.join(", "));

    // What must be rebuilt when `bytes` changes? Everything that reaches it, any distance:
    // the id-level kernel with a reusable scratch, as a hot loop would call it.
    let snap = db.snapshot();
    let Some(bytes) = snap.node_id("bytes") else {
        return Err(hopgraph::Error::NodeNotFound {
            key: "bytes".into(),
        });
    };
    let mut scratch = Scratch::new();
    let query = ExpandQuery::new(std::slice::from_ref(&bytes), 16, Direction::In);
    let outcome = expand(&snap, &mut scratch, &query);
    let mut rebuilt = Vec::new();
    for r in &outcome.results {
        if let Some((key, _)) = snap.node_label(r.node)? {
            rebuilt.push(format!("{key} (distance {})", r.hop));
        }
    }
    println!("rebuilt when bytes changes: {}", rebuilt.join(", "));
    drop(snap);
    drop(db);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
