//! The JSON line formats: hopgraph's own lossless export and the MCP reference memory
//! server's (`server-memory`, and `aim` with its leading marker line).
//!
//! hopgraph JSONL, version 1, one JSON object per line:
//!
//! ```text
//! {"hopgraph":"export","version":1,"nodes":2,"edges":1}
//! {"node":{"key":"a","kind":"","title":"A","content":"","importance":0.0,"status":"","props":{},"embedding":null,"created_at":1,"updated_at":1}}
//! {"edge":{"source":"a","target":"b","type":"caused_by","weight":1.0,"props":{},"id":0,"created_at":1}}
//! ```
//!
//! The header is optional on import; when it carries `nodes`/`edges` counts, the file must
//! hold exactly that many lines of each kind (a truncated export is an error). In node and
//! edge lines only `key`, resp. `source`/`target`/`type` are required. Ids and timestamps
//! are written for reference and assigned anew on import.

use serde::{Deserialize, Serialize};

use hopgraph::{Edge, Node, NodeProps, Props};

/// The export format version this build writes and reads.
pub(crate) const JSONL_VERSION: u32 = 1;

/// A line of hopgraph JSONL: exactly one of the three parts is present. Unknown fields are
/// refused (a misspelt `titel` would otherwise vanish silently); `import --lenient` strips
/// them first with [`strip_unknown`].
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Line {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hopgraph: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edges: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge: Option<EdgeRecord>,
}

/// A node with all its properties.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NodeRecord {
    pub key: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub importance: f32,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub props: Props,
    #[serde(default)]
    pub embedding: Option<Vec<f32>>,
    #[serde(default)]
    pub created_at: Option<u64>,
    #[serde(default)]
    pub updated_at: Option<u64>,
}

impl NodeRecord {
    pub fn from_node(n: &Node) -> NodeRecord {
        let p = &n.props;
        NodeRecord {
            key: n.key.clone(),
            kind: p.kind.clone(),
            title: p.title.clone(),
            content: p.content.clone(),
            importance: p.importance,
            status: p.status.clone(),
            props: p.props.clone(),
            embedding: p.embedding.clone(),
            created_at: Some(n.created_at),
            updated_at: Some(n.updated_at),
        }
    }

    pub fn into_props(self) -> (String, NodeProps) {
        let props = NodeProps {
            kind: self.kind,
            title: self.title,
            content: self.content,
            importance: self.importance,
            status: self.status,
            props: self.props,
            embedding: self.embedding,
        };
        (self.key, props)
    }
}

fn weight_default() -> f32 {
    1.0
}

/// An edge with its weight and properties, endpoints by key.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EdgeRecord {
    pub source: String,
    pub target: String,
    #[serde(rename = "type")]
    pub edge_type: String,
    #[serde(default = "weight_default")]
    pub weight: f32,
    #[serde(default)]
    pub props: Props,
    #[serde(default)]
    pub id: Option<u64>,
    #[serde(default)]
    pub created_at: Option<u64>,
}

impl EdgeRecord {
    pub fn from_edge(e: &Edge, source: String, target: String, edge_type: String) -> EdgeRecord {
        EdgeRecord {
            source,
            target,
            edge_type,
            weight: e.weight,
            props: e.props.clone(),
            id: Some(e.id.0),
            created_at: Some(e.created_at),
        }
    }
}

/// A line of the reference memory server's file (an entity or a relation; AIM's marker
/// line is recognised before this is parsed).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MemoryLine {
    #[serde(rename = "type")]
    pub line_type: String,
    pub name: Option<String>,
    #[serde(rename = "entityType")]
    pub entity_type: Option<String>,
    #[serde(default)]
    pub observations: Vec<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    #[serde(rename = "relationType")]
    pub relation_type: Option<String>,
}

/// The fields of each JSON line object, for [`strip_unknown`]: the line's own, and those of
/// its `node` / `edge` object.
pub(crate) const LINE_FIELDS: &[&str] = &["hopgraph", "version", "nodes", "edges", "node", "edge"];
const NODE_FIELDS: &[&str] = &[
    "key",
    "kind",
    "title",
    "content",
    "importance",
    "status",
    "props",
    "embedding",
    "created_at",
    "updated_at",
];
const EDGE_FIELDS: &[&str] = &[
    "source",
    "target",
    "type",
    "weight",
    "props",
    "id",
    "created_at",
];
/// The fields of a memory server line.
pub(crate) const MEMORY_FIELDS: &[&str] = &[
    "type",
    "name",
    "entityType",
    "observations",
    "from",
    "to",
    "relationType",
];

/// Removes the fields of `line` that `known` does not list (and, for hopgraph lines, those
/// of its `node`/`edge` object; free-form `props` are kept whole). Returns how many went.
pub(crate) fn strip_unknown(line: &mut serde_json::Value, known: &[&str]) -> u64 {
    fn strip(obj: &mut serde_json::Map<String, serde_json::Value>, known: &[&str]) -> u64 {
        let before = obj.len();
        obj.retain(|k, _| known.contains(&k.as_str()));
        (before - obj.len()) as u64
    }
    let serde_json::Value::Object(obj) = line else {
        return 0;
    };
    let mut n = strip(obj, known);
    if let Some(serde_json::Value::Object(node)) = obj.get_mut("node") {
        n += strip(node, NODE_FIELDS);
    }
    if let Some(serde_json::Value::Object(edge)) = obj.get_mut("edge") {
        n += strip(edge, EDGE_FIELDS);
    }
    n
}

/// An entity as the reference server writes it.
#[derive(Debug, Serialize)]
pub(crate) struct EntityOut<'a> {
    #[serde(rename = "type")]
    pub line_type: &'static str,
    pub name: &'a str,
    #[serde(rename = "entityType")]
    pub entity_type: &'a str,
    pub observations: Vec<&'a str>,
}

/// A relation as the reference server writes it.
#[derive(Debug, Serialize)]
pub(crate) struct RelationOut<'a> {
    #[serde(rename = "type")]
    pub line_type: &'static str,
    pub from: &'a str,
    pub to: &'a str,
    #[serde(rename = "relationType")]
    pub relation_type: &'a str,
}

/// The observations of a node imported from the memory server (`props.observations`).
pub(crate) fn observations(props: &Props) -> Vec<&str> {
    match props.get("observations") {
        Some(serde_json::Value::Array(v)) => v.iter().filter_map(|o| o.as_str()).collect(),
        _ => Vec::new(),
    }
}
