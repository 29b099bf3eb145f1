//! Protocol-neutral semantics of the agent-memory tools (see `shared/MCP-TOOLS.md`).
//!
//! Each tool is a function from a typed request to a `Serialize` result (or a
//! [`ToolError`] carrying the contract's exact error text). The MCP server and the CLI
//! both call these, so a tool behaves the same whichever adapter serves it, and the
//! adapters only translate. Graph decisions stay in the engine and the traversal kernel.

pub mod path;
pub mod walk;

use std::fmt;

use serde_json::{Map, Value};

use crate::model::Node;

/// A failed tool call: the one-line message the contract prescribes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError(pub String);

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolError {}

impl From<crate::Error> for ToolError {
    fn from(e: crate::Error) -> ToolError {
        ToolError(e.to_string())
    }
}

/// An RFC 3339 UTC timestamp (millisecond precision) from milliseconds since the epoch.
pub fn rfc3339(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_millis(t).to_string()
}

/// `Some(s)` for a non-empty string, `None` (rendered `null`) for an empty one.
pub fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

/// A node's properties as tools show and filter them: its metadata's top-level keys plus
/// `type`, `title` and `importance`, which win over metadata keys of the same name.
pub fn node_properties(node: &Node) -> Map<String, Value> {
    let mut m = node.props.props.clone();
    m.insert("type".into(), Value::String(node.props.kind.clone()));
    m.insert("title".into(), Value::String(node.props.title.clone()));
    m.insert(
        "importance".into(),
        serde_json::json!(node.props.importance),
    );
    m
}

/// A node's status: `metadata.status` when it is a string, else the status field.
pub fn node_status(node: &Node) -> &str {
    match node.props.props.get("status") {
        Some(Value::String(s)) => s,
        _ => &node.props.status,
    }
}

/// Characters of content shown when a node has no title.
pub const SUMMARY_CHARS: usize = 120;

/// A short description of a node: its title, or the start of its content.
pub fn summary(node: &Node) -> String {
    if !node.props.title.is_empty() {
        return node.props.title.clone();
    }
    let c = &node.props.content;
    match c.char_indices().nth(SUMMARY_CHARS) {
        Some((i, _)) => format!("{}…", &c[..i]),
        None => c.clone(),
    }
}
