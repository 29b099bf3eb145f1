//! What an agent pays to know the tools: the default tool set's definitions as clients hand
//! them to a model (for each tool its name, description and inputSchema, as compact JSON)
//! must stay within 20 KB (issue 42; 24,477 bytes for 15 tools before it, 19,723 for 18
//! with the time tools after).

use hopgraph_mcp::schema::Profile;
use hopgraph_mcp::server::rmcp_tools;
use serde_json::json;

/// The budget of the default (`memory`) tool set's definitions, in bytes.
const DEFINITIONS_BYTES_MAX: usize = 20 * 1024;

/// Bytes of `{name, description, inputSchema}` per tool, compact JSON, as `tools/list`
/// serves them (the rmcp `Tool`s the server answers with).
fn definition_bytes(profiles: &[Profile]) -> Vec<(String, usize)> {
    rmcp_tools(profiles)
        .iter()
        .map(|t| {
            let def = json!({
                "name": t.name,
                "description": t.description,
                "inputSchema": &*t.input_schema,
            });
            (t.name.to_string(), def.to_string().len())
        })
        .collect()
}

#[test]
fn default_tool_definitions_fit_the_budget() {
    let sizes = definition_bytes(&[Profile::Memory]);
    let total: usize = sizes.iter().map(|(_, n)| n).sum();
    for (name, n) in &sizes {
        println!("{name:>20} {n:>6} bytes");
    }
    println!(
        "default tool set: {} tools, {total} bytes of definitions (budget {DEFINITIONS_BYTES_MAX})",
        sizes.len()
    );
    assert!(
        total <= DEFINITIONS_BYTES_MAX,
        "the default tool set's definitions are {total} bytes, the budget is {DEFINITIONS_BYTES_MAX}"
    );
    // Every tool the memory set is documented to serve is counted.
    for name in [
        "create_memory",
        "update_memory",
        "get_memory",
        "memory_search",
        "link",
        "memory_path",
        "expand",
        "supersede_memory",
        "memory_history",
        "end_link",
    ] {
        assert!(sizes.iter().any(|(n, _)| n == name), "{name} is not listed");
    }
}
