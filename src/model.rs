//! The data model: node and edge records as the engine stores and returns them.
//!
//! Records are what `Snapshot::node` and `Snapshot::edge` return and what the WAL and the
//! segment catalog encode. The traversal hot path never touches them: it reads only CSR
//! arrays of ids.

use crate::graph::{EdgeId, NodeId, TypeId};

/// A JSON object of free-form properties.
pub type Props = serde_json::Map<String, serde_json::Value>;

/// The properties of a node that a writer sets (everything but identity and timestamps).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct NodeProps {
    /// What kind of thing the node is (a memory type, an entity type, ...).
    pub kind: String,
    /// Short human-readable title.
    pub title: String,
    /// Body text, up to 1 MiB.
    pub content: String,
    /// Importance score.
    pub importance: f32,
    /// Lifecycle status such as `active` or `superseded`; empty means unset.
    pub status: String,
    /// Free-form properties, a JSON object of at most 64 KiB serialized.
    pub props: Props,
    /// Optional embedding vector (1..=4096 dimensions).
    pub embedding: Option<Vec<f32>>,
}

/// A node as stored: its key, dense id, properties and commit timestamps (milliseconds since
/// the Unix epoch).
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Dense id assigned by the engine.
    pub id: NodeId,
    /// The unique string key.
    pub key: String,
    /// The properties.
    pub props: NodeProps,
    /// Commit time of the node's creation.
    pub created_at: u64,
    /// Commit time of the last change.
    pub updated_at: u64,
    /// Start of the node's validity in event time (ms since the Unix epoch; by default
    /// its commit time of creation). See [`Node::valid_at`].
    pub valid_from: u64,
    /// End of its validity (exclusive); `None`: never ends.
    pub valid_to: Option<u64>,
}

impl Node {
    /// Whether the node is valid at `t`: `valid_from <= t < valid_to`.
    #[inline]
    pub fn valid_at(&self, t: u64) -> bool {
        valid_at(self.valid_from, self.valid_to, t)
    }
}

/// A directed, typed edge as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    /// Stable id.
    pub id: EdgeId,
    /// Source node.
    pub source: NodeId,
    /// Target node.
    pub target: NodeId,
    /// Interned type id.
    pub edge_type: TypeId,
    /// Weight (default 1.0).
    pub weight: f32,
    /// Free-form properties (empty when none), at most 4 KiB serialized.
    pub props: Props,
    /// Commit time of creation (milliseconds since the Unix epoch).
    pub created_at: u64,
    /// Start of the edge's validity in event time (ms since the Unix epoch; by default
    /// its commit time). See [`Edge::valid_at`].
    pub valid_from: u64,
    /// End of its validity (exclusive); `None`: never ends.
    pub valid_to: Option<u64>,
}

impl Edge {
    /// Whether the edge is valid at `t`: `valid_from <= t < valid_to`.
    #[inline]
    pub fn valid_at(&self, t: u64) -> bool {
        valid_at(self.valid_from, self.valid_to, t)
    }
}

/// Whether an interval `[from, to)` (`to` `None`: never ends) contains `t`.
#[inline]
pub fn valid_at(from: u64, to: Option<u64>, t: u64) -> bool {
    from <= t && to.is_none_or(|to| t < to)
}

/// Optional per-edge data given when linking.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeProps {
    /// Weight; 1.0 unless given.
    pub weight: f32,
    /// Properties; empty unless given.
    pub props: Props,
    /// Start of validity (ms since the Unix epoch); `None`: the commit time.
    pub valid_from: Option<u64>,
    /// End of validity (exclusive); `None`: never ends. Must be after `valid_from`.
    pub valid_to: Option<u64>,
}

impl Default for EdgeProps {
    fn default() -> EdgeProps {
        EdgeProps {
            weight: 1.0,
            props: Props::new(),
            valid_from: None,
            valid_to: None,
        }
    }
}
