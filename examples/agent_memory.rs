//! Embedding hopgraph as an agent's memory: memories as nodes, typed links between them.
//!
//! An agent records what happened and why (`caused_by`, `supersedes`), and later asks how
//! two memories are connected, what a memory led to, and what a snapshot looked like while
//! new memories keep arriving. (The MCP server `hopgraph-mcp` serves the same engine to
//! agents as tools.)
//!
//! Run: `cargo run --example agent_memory [DB_DIR]`

use hopgraph::{Database, Direction, EdgeProps, NodeProps, PathSpec, WriteBatch};

fn memory(kind: &str, title: &str, content: &str, importance: f32) -> NodeProps {
    NodeProps {
        kind: kind.into(),
        title: title.into(),
        content: content.into(),
        importance,
        ..NodeProps::default()
    }
}

fn main() -> hopgraph::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("hopgraph-example-memory"));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(&dir)?;

    let mut day1 = WriteBatch::new();
    day1.create_node(
        "m1",
        memory(
            "episodic",
            "Release 2.3 shipped",
            "Deployed to prod at 14:00.",
            0.6,
        ),
    )
    .create_node(
        "m2",
        memory(
            "episodic",
            "Checkout errors",
            "5xx on /checkout after 14:05.",
            0.9,
        ),
    )
    .create_node(
        "m3",
        memory(
            "semantic",
            "Pool size",
            "The DB pool is 10 connections.",
            0.4,
        ),
    )
    .link("m2", "caused_by", "m1", EdgeProps::default())
    .link("m1", "related_to", "m3", EdgeProps::default());
    db.commit(day1)?;

    // A reader keeps its view while the agent goes on writing.
    let before = db.snapshot();
    let mut day2 = WriteBatch::new();
    day2.create_node(
        "m4",
        memory("strategic", "Pool size 50", "Raised the pool to 50.", 0.8),
    )
    .link("m4", "supersedes", "m3", EdgeProps::default())
    .link("m2", "caused_by", "m3", EdgeProps::default());
    db.commit(day2)?;
    println!(
        "memories: {} in the earlier snapshot, {} now",
        before.node_count(),
        db.snapshot().node_count()
    );

    // How is the outage connected to the newest decision?
    if let Some(p) = db.shortest_path("m2", "m4", &PathSpec::new().max_hops(4))? {
        let hops: Vec<String> = p
            .steps
            .iter()
            .zip(p.nodes.iter().skip(1))
            .map(|(s, (_, key))| match s.forward {
                true => format!("-{}-> {key}", s.edge_type),
                false => format!("<-{}- {key}", s.edge_type),
            })
            .collect();
        println!("m2 {}", hops.join(" "));
    }

    // What caused the errors?
    for n in db.neighbors_of("m2", Direction::Out, &["caused_by"])? {
        if let Some(node) = db.snapshot().node(n.node)? {
            println!("m2 caused_by {}: {}", n.key, node.props.title);
        }
    }
    drop(before);
    drop(db);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
